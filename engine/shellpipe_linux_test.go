package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
)

// TestShellPipelineIsRefusedWhole: a pipeline of two commands in a
// transaction's shell answered from one side with status 0 (ls out |
// wc -l said 0 beside a staged file): the other side is refused, one
// command at a time, and the script's status is 126 saying so, whichever
// side was refused, nothing of the pipeline's output kept (the side that
// ran still answered "0" alone). As one command (sh -c) it runs.
func TestShellPipelineIsRefusedWhole(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	c, stop := serveClient(t, ws, filepath.Join(t.TempDir(), "shell.jbx"))
	defer stop()
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "pipes"})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Tx(ctx, begun.Tx)
	defer tx.Rollback(ctx, controlapi.Rollback{})
	content := "hello\n"
	if _, err := tx.Write(ctx, controlapi.Write{Path: "out/a.txt", Content: &content}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		// What came before the pipeline is kept; nothing of it is (the
		// side that ran answered alone: "0", wc counting nothing).
		r, err := tx.Shell(ctx, controlapi.Shell{Command: "echo before; ls out | wc -l; echo after"})
		if err != nil {
			t.Fatal(err)
		}
		if r.ExitCode != 126 || !strings.Contains(r.Stderr, "one command at a time") || r.Stdout != "before\n" {
			t.Fatalf("ls out | wc -l: exit %d, stdout %q, stderr %q; want 126, the refusal, the script stopped, its output before the pipeline alone", r.ExitCode, r.Stdout, r.Stderr)
		}
	}
	r, err := tx.Shell(ctx, controlapi.Shell{Command: "sh -c 'ls out | wc -l'"})
	if err != nil || r.ExitCode != 0 || strings.TrimSpace(r.Stdout) != "1" {
		t.Fatalf("sh -c 'ls out | wc -l': %+v %v, want 1", r, err)
	}
}
