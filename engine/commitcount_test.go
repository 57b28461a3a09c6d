package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
)

// TestCommitCountsFiles: a commit answers the number of files it changed
// (docs/control-api.md; the Python SDK's commit adds the statements). It
// counted every change of the change set, the folders made for the
// writes among them: four files written in two new folders and one
// deleted came back as 7.
func TestCommitCountsFiles(t *testing.T) {
	ctx := context.Background()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "count.jbx")
	if err := os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, stop := serveClient(t, ws, tape)
	defer stop()
	begun, err := c.Begin(ctx, controlapi.Begin{Name: "count"})
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := c.Tx(ctx, begun.Tx)
	content := "x\n"
	for _, p := range []string{"top.txt", "out/a.txt", "out/deep/b.txt", "out/deep/c.txt"} {
		if _, err := tx.Write(ctx, controlapi.Write{Path: p, Content: &content}); err != nil {
			t.Fatalf("write %s: %v", p, err)
		}
	}
	if _, err := tx.Delete(ctx, controlapi.PathOf{Path: "old.txt"}); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Changes != 5 {
		t.Errorf("a commit of four written files (two new folders made for them) and a deleted one: changes %d, want 5", out.Changes)
	}
	if _, err := os.Stat(filepath.Join(ws, "out/deep/c.txt")); err != nil {
		t.Errorf("the commit did not reach the workspace: %v", err)
	}
}
