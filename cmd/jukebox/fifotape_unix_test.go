//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestANamedPipeIsNoTape: a FIFO named x.jbx hung every reader (ls of its
// folder, verify, show), deaf to Ctrl-C: the good tapes beside it were
// never listed.
func TestANamedPipeIsNoTape(t *testing.T) {
	dir := sampleTapes(t)
	fifo := filepath.Join(dir, "pipe.jbx")
	must(t, syscall.Mkfifo(fifo, 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"ls", dir}, {"verify", fifo}, {"show", fifo}, {"cost", fifo}} {
		cmd := jukeboxCmd(ctx, dir, args...)
		out, _ := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("jukebox %s hung on a named pipe", strings.Join(args, " "))
		}
		if cmd.ProcessState.ExitCode() != ExitBadTape || !strings.Contains(string(out), "not a tape: a named pipe") {
			t.Errorf("jukebox %s: exit %d\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), out)
		}
		if args[0] == "ls" && !strings.Contains(string(out), "agent-run") {
			t.Errorf("ls left out the tapes beside the pipe:\n%s", out)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was changed: %v %v", fi, err)
	}
}
