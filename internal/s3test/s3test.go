// Package s3test runs a real S3-compatible server for a test: the Versity
// S3 Gateway (versitygw) with its posix backend, over a temporary folder,
// on a free loopback port, with static credentials. The binary comes from
// testenv.RequireVersityGW (.ci/versitygw.sh builds it from the tools
// module). A bucket is a folder of the root: Bucket makes one.
package s3test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// Server is a running gateway.
type Server struct {
	Endpoint       string // http://127.0.0.1:PORT
	Access, Secret string
	Region         string
	bin, root      string
	addr           string

	mu   sync.Mutex
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// Start runs the gateway until the test ends; its log is printed when the
// test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Run(testenv.RequireVersityGW(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("versitygw's log:\n%s", s.Log())
		}
	})
	return s
}

// Run starts the gateway binary bin over the folder root on a free port
// and waits until it answers. For programs that are not tests (bench/).
func Run(bin, root string) (*Server, error) {
	port, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Access: "AKIAJUKEBOXTEST", Secret: "jukebox-test-secret-key", Region: "us-east-1",
		bin: bin, root: root, addr: "127.0.0.1:" + strconv.Itoa(port)}
	s.Endpoint = "http://" + s.addr
	return s, s.start()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = &bytes.Buffer{}
	cmd := exec.Command(s.bin, "--access", s.Access, "--secret", s.Secret, "--region", s.Region,
		"--port", s.addr, "--quiet", "posix", s.root)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("versitygw: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("versitygw exited at start: %s", s.log)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			return fmt.Errorf("versitygw did not answer on %s in 20 s: %s", s.addr, s.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop ends the gateway (the store goes down); its folder stays.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	if contSig != nil {
		cmd.Process.Signal(contSig) // a paused gateway is killed all the same
	}
	cmd.Process.Kill()
	<-done
}

// Pause stops the gateway with SIGSTOP: it keeps its port and takes
// connections (the kernel does), and answers nothing until Resume.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.signal(t, stopSig)
}

// Resume lets a paused gateway go on (SIGCONT).
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.signal(t, contSig)
}

func (s *Server) signal(t testing.TB, sig os.Signal) {
	if sig == nil {
		t.Fatal("s3test: pausing the gateway needs SIGSTOP, a Unix system's")
	}
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		t.Fatal("s3test: the gateway is not running")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Restart brings the gateway back on the same port over the same folder.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// Log is what the gateway printed.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Bucket makes a bucket (a folder of the gateway's root) and returns its
// store URL with the prefix, as gocloud.dev's s3blob takes it.
func (s *Server) Bucket(t testing.TB, name, prefix string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(s.root, name), 0o755); err != nil {
		t.Fatal(err)
	}
	return s.URL(name, prefix)
}

// ObjectPath is the file that holds the object key of bucket (the posix
// backend keeps each object as a file, its ETag beside it): a test that
// changes it in place changes the object's bytes and not its ETag.
func (s *Server) ObjectPath(bucket, key string) string {
	return filepath.Join(s.root, bucket, filepath.FromSlash(key))
}

// URL is the store URL of prefix in bucket.
func (s *Server) URL(bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?endpoint=" + s.Endpoint + "&region=" + s.Region + "&use_path_style=true"
}

// Env is the credentials for a child process.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.Access, "AWS_SECRET_ACCESS_KEY=" + s.Secret, "AWS_REGION=" + s.Region}
}

// Setenv sets the credentials in this process for the test.
func (s *Server) Setenv(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", s.Access)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.Secret)
	t.Setenv("AWS_REGION", s.Region)
}
