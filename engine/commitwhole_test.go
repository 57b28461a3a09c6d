package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
)

// TestSDKWriteToForeignStateIsRefused: an SDK transaction commits
// everything it staged or nothing (docs/python-sdk.md). A staged write
// under another workspace's jukebox state folder (sub/.jukebox/booth/x),
// which no commit ever changes, was accepted, then left out of the
// commit without a word: the commit answered success with the rest
// applied (and 0 files for the write). The write is refused when staged
// now (403 sandbox_violation, naming the path), and the commit applies
// the rest, counted.
func TestSDKWriteToForeignStateIsRefused(t *testing.T) {
	ctx := context.Background()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "whole.jbx")
	c, stop := serveClient(t, ws, tape)
	defer stop()
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "whole"})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Tx(ctx, begun.Tx)
	content := "x\n"
	if _, err := tx.Write(ctx, controlapi.Write{Path: "kept.txt", Content: &content}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sub/.jukebox/booth/x", "sub/.jukebox"} {
		_, err = tx.Write(ctx, controlapi.Write{Path: p, Content: &content})
		ce, ok := errors.AsType[*controlapi.Error](err)
		if !ok || ce.Status != 403 || ce.Type != controlapi.TypeSandboxViolation || !strings.Contains(ce.Message, "another workspace's jukebox state") {
			t.Errorf("a write of %s: %v; want 403 sandbox_violation saying why", p, err)
		}
	}
	out, err := tx.Commit(ctx)
	if err != nil || out.Changes != 1 {
		t.Fatalf("the commit: %+v, %v; want kept.txt alone", out, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "sub")); err == nil {
		t.Error("the refused write left a folder in the workspace")
	}
}
