package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestAbandonedRunStopsItsMCPServers: a run that cannot start its agent
// (here its capture files cannot be written: the temporary folder is a
// file) stops the HTTP MCP endpoints it opened for the agent, as a run
// that ended does; they listened on until the process exited.
func TestAbandonedRunStopsItsMCPServers(t *testing.T) {
	// Not parallel: it counts this process's listening sockets.
	dir := t.TempDir()
	notDir := filepath.Join(dir, "tmp")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := listening(t)
	t.Setenv("TMPDIR", notDir)
	_, err := engine.Record(context.Background(), engine.RecordOptions{Tape: filepath.Join(dir, "run.jbx"),
		RunOptions: engine.RunOptions{Argv: []string{"true"}, Dir: dir, Env: cleanEnv(),
			MCP:    map[string]string{"docs": "http://127.0.0.1:9/mcp", "files": "http://127.0.0.1:9/files"},
			Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}})
	if err == nil {
		t.Fatal("the run started with its temporary folder a file")
	}
	if after := listening(t); after > before {
		t.Errorf("%d sockets listen after the abandoned run, %d before: its MCP endpoints stayed open (%v)", after, before, err)
	}
}

// listening counts the TCP sockets this process listens on.
func listening(t *testing.T) int {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] { // 0A: LISTEN
				n++
			}
		}
	}
	return n
}
