// Package azuretest runs Azurite's blob service for a test: Microsoft's
// Azure Storage emulator, the npm package the test command installs into
// testdata/agents, on a free loopback port over a temporary folder, with
// its well-known development account.
package azuretest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/jukebox-os/jukebox/internal/syncio"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// Azurite's development account, the same on every machine (documented
// by Microsoft; it guards nothing).
const (
	Account = "devstoreaccount1"
	Key     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is a running Azurite blob service.
type Server struct {
	Addr string // 127.0.0.1:PORT
}

// Start runs Azurite's blob service until the test ends; its log is
// printed when the test failed.
func Start(t testing.TB) *Server {
	t.Helper()
	agents := testenv.RequireNode(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port)}
	var log syncio.Buffer // written by exec's goroutine, read when azurite is late
	cmd := exec.Command("node", filepath.Join(agents, "node_modules", "azurite", "dist", "src", "blob", "main.js"),
		"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", t.TempDir(),
		"--silent", "--skipApiVersionCheck", "--loose")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("azurite: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("azurite's log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second) // node on a loaded machine
	for {
		if c, err := net.Dial("tcp", s.Addr); err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("azurite did not listen on %s in 60 s:\n%s", s.Addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Container makes a container and returns its store URL with the prefix,
// as gocloud.dev's azureblob takes it; Setenv gives the account.
func (s *Server) Container(t testing.TB, name, prefix string) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(Account, Key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azblob.NewClientWithSharedKeyCredential(fmt.Sprintf("http://%s/%s/", s.Addr, Account), cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateContainer(context.Background(), name, nil); err != nil {
		t.Fatalf("azurite: create container %s: %v", name, err)
	}
	return "azblob://" + name + "/" + prefix + "?localemu=true&protocol=http&domain=" + s.Addr
}

// Setenv sets the development account's credentials for the test.
func (s *Server) Setenv(t testing.TB) {
	t.Setenv("AZURE_STORAGE_ACCOUNT", Account)
	t.Setenv("AZURE_STORAGE_KEY", Key)
}
