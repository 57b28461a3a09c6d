// Package gcstest runs fake-gcs-server for a test: a Google Cloud Storage
// emulator speaking its JSON API, on a free loopback port, in memory. The
// binary comes from testenv.RequireFakeGCS (.ci/fakegcs.sh builds it from
// the tools module). gocloud.dev's gcsblob reaches it through
// STORAGE_EMULATOR_HOST, which Setenv sets.
package gcstest

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// Server is a running emulator.
type Server struct {
	Addr string // 127.0.0.1:PORT
}

// Start runs the emulator until the test ends; its log is printed when
// the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testenv.RequireFakeGCS(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port)}
	var log bytes.Buffer
	cmd := exec.Command(bin, "-scheme", "http", "-host", "127.0.0.1", "-port", strconv.Itoa(port),
		"-public-host", s.Addr, "-backend", "memory", "-log-level", "error")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("fake-gcs-server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("fake-gcs-server's log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + s.Addr + "/storage/v1/b?project=test")
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-gcs-server did not answer on %s in 20 s:\n%s", s.Addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Bucket makes a bucket and returns its store URL with the prefix
// (anonymous: the emulator takes no credentials).
func (s *Server) Bucket(t testing.TB, name, prefix string) string {
	t.Helper()
	resp, err := http.Post("http://"+s.Addr+"/storage/v1/b?project=test", "application/json",
		strings.NewReader(fmt.Sprintf(`{"name":%q}`, name)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("fake-gcs-server: create bucket %s: %s", name, resp.Status)
	}
	return "gs://" + name + "/" + prefix + "?anonymous=true"
}

// Setenv points gocloud.dev's gcsblob at the emulator for the test.
func (s *Server) Setenv(t testing.TB) { t.Setenv("STORAGE_EMULATOR_HOST", s.Addr) }
