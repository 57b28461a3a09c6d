//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRecoverKeepsUserEdits: after a crash past the decision, the user
// edits (or deletes, or makes) a path the commit changes before anything
// recovers. Recover reports a conflict naming it, applies nothing over
// it and undoes nothing; an edit elsewhere does not stop the recovery.
func TestRecoverKeepsUserEdits(t *testing.T) {
	user := map[string]func(ws string) error{
		"edit":   func(ws string) error { return os.WriteFile(filepath.Join(ws, "b.txt"), []byte("user"), 0o644) },
		"delete": func(ws string) error { return os.Remove(filepath.Join(ws, "b.txt")) },
		"make":   func(ws string) error { return os.WriteFile(filepath.Join(ws, "new.txt"), []byte("user"), 0o644) },
	}
	for _, step := range []string{"decided", "apply-0"} {
		for name, change := range user {
			ws := t.TempDir()
			mkTree(t, ws, map[string]string{"a.txt": "a", "b.txt": "b", "other.txt": "o"})
			tx, err := Begin(ws, Options{})
			must(t, err)
			must(t, tx.Files().WriteFile("a.txt", []byte("agent a"), 0o644))
			must(t, tx.Files().WriteFile("b.txt", []byte("agent b"), 0o644))
			must(t, tx.Files().WriteFile("new.txt", []byte("agent new"), 0o644))
			failpoint = crashAt(step)
			_, err = tx.Commit(ctx)
			failpoint = nil
			if !errors.Is(err, ErrCrash) {
				t.Fatalf("%s: commit: %v", step, err)
			}
			must(t, change(ws))
			before := treeHash(t, ws)
			_, err = Recover(ctx, ws, Options{})
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Conflicts) != 1 {
				t.Fatalf("%s/%s: recover: %v", step, name, err)
			}
			// What "as they were" asks: content written back alone is not.
			if !strings.Contains(err.Error(), "writing the old content back is not enough") {
				t.Errorf("%s/%s: recover does not say what counts as put back: %v", step, name, err)
			}
			if treeHash(t, ws) != before {
				t.Fatalf("%s/%s: recovery changed the workspace: %v", step, name, readTree(t, ws))
			}
			if left, _ := List(ws, Options{}); len(left) != 1 || !left[0].Committing {
				t.Fatalf("%s/%s: the journal was not kept: %+v", step, name, left)
			}
		}
	}
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "other.txt": "o"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("agent a"), 0o644))
	failpoint = crashAt("decided")
	tx.Commit(ctx)
	failpoint = nil
	must(t, os.WriteFile(filepath.Join(ws, "other.txt"), []byte("user"), 0o644))
	if _, err := Recover(ctx, ws, Options{}); err != nil {
		t.Fatalf("recover with an edit outside the change set: %v", err)
	}
	if got := readTree(t, ws); got["a.txt"] != "agent a" || got["other.txt"] != "user" {
		t.Fatalf("after recovery: %v", got)
	}
}

// TestRecoverUndoKeepsUserEdits: a commit that failed (ENOSPC) crashed
// while undoing; the user then edits the file it had applied. Recover
// reports the conflict instead of putting the original back over it.
func TestRecoverUndoKeepsUserEdits(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "b.txt": "b"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("agent a"), 0o644))
	must(t, tx.Files().WriteFile("b.txt", []byte("agent b"), 0o644))
	failpoint = func(s string) error {
		switch s {
		case "apply-1":
			return syscall.ENOSPC
		case "undo-journal":
			return ErrCrash
		}
		return nil
	}
	_, err = tx.Commit(ctx)
	failpoint = nil
	if !errors.Is(err, ErrCrash) {
		t.Fatalf("commit: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("user"), 0o644))
	_, err = Recover(ctx, ws, Options{})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "a.txt" {
		t.Fatalf("recover: %v", err)
	}
	if got := readTree(t, ws)["a.txt"]; got != "user" {
		t.Fatalf("the user's edit was undone: %q", got)
	}
}
