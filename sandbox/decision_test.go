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

// TestDecisionWriteFailureKeepsOpen: a decision record that cannot be
// written (ENOSPC, EIO) applies nothing and keeps the staged change set
// and the transaction open (it deleted them, "(rollback: <nil>)").
func TestDecisionWriteFailureKeepsOpen(t *testing.T) {
	for _, errno := range []error{syscall.ENOSPC, syscall.EIO} {
		ws := t.TempDir()
		mkTree(t, ws, map[string]string{"a.txt": "a"})
		before := treeHash(t, ws)
		tx, err := Begin(ws, Options{})
		must(t, err)
		must(t, tx.Files().WriteFile("a.txt", []byte("agent"), 0o644))
		must(t, tx.Files().WriteFile("new.txt", []byte("new"), 0o644))
		failpoint = func(s string) error {
			if s == "write-journal-commit" {
				return errno
			}
			return nil
		}
		_, err = tx.Commit(ctx)
		failpoint = nil
		if !errors.Is(err, errno) || !strings.Contains(err.Error(), "stays open") || strings.Contains(err.Error(), "<nil>") {
			t.Fatalf("%v: commit: %v", errno, err)
		}
		if tx.Closed() || treeHash(t, ws) != before {
			t.Fatalf("%v: the transaction closed or the workspace changed", errno)
		}
		if cs, err := tx.Diff(); err != nil || len(cs.Changes) != 2 {
			t.Fatalf("%v: the staged change set after the failure: %v %v", errno, ops(cs), err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatalf("%v: commit again: %v", errno, err)
		}
		if got := readTree(t, ws); got["a.txt"] != "agent" || got["new.txt"] != "new" {
			t.Fatalf("%v: committed %v", errno, got)
		}
	}
}

// TestRecoverKeepsUserEdits: a decided commit interrupted by a crash,
// whose paths the user changed before recovery, is not applied over the
// user's changes: recovery reports the conflict, undoes what it had
// applied and leaves the transaction open (it overwrote them).
func TestRecoverKeepsUserEdits(t *testing.T) {
	for _, step := range []string{"decided", "apply-0"} {
		ws := t.TempDir()
		mkTree(t, ws, map[string]string{"a.txt": "a", "b.txt": "b", "c.txt": "c"})
		tx, err := Begin(ws, Options{})
		must(t, err)
		for _, p := range []string{"a.txt", "b.txt", "c.txt"} {
			must(t, tx.Files().WriteFile(p, []byte("agent "+p), 0o644))
		}
		failpoint = crashAt(step)
		_, err = tx.Commit(ctx)
		failpoint = nil
		if !errors.Is(err, ErrCrash) {
			t.Fatalf("%s: commit: %v", step, err)
		}
		must(t, os.WriteFile(filepath.Join(ws, "c.txt"), []byte("user, after the crash"), 0o644))
		must(t, os.Remove(filepath.Join(ws, "b.txt")))
		rep, err := Recover(ctx, ws, Options{})
		if err != nil || len(rep.Conflicted) != 1 || len(rep.Conflicted[0].Conflicts) != 2 || !rep.Conflicted[0].Open || len(rep.Committed) != 0 {
			t.Fatalf("%s: recover: %+v %v", step, rep, err)
		}
		got := readTree(t, ws)
		if got["c.txt"] != "user, after the crash" || got["a.txt"] != "a" || got["b.txt"] != "" {
			t.Fatalf("%s: after recovery: %v", step, got)
		}
		again, err := Open(ws, tx.ID(), Options{})
		if err != nil {
			t.Fatalf("%s: the transaction is not open again: %v", step, err)
		}
		var ce *ConflictError
		if _, err := again.Commit(ctx); !errors.As(err, &ce) {
			t.Fatalf("%s: a commit after recovery: %v", step, err)
		}
		must(t, again.Rollback(ctx))
	}
}
