//go:build linux

package sandbox

import (
	"errors"
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

// TestDecisionWriteFailureKeepsRoots: with a folder staged beside the
// workspace, a decision that cannot be written keeps both open, and a
// later commit applies both.
func TestDecisionWriteFailureKeepsRoots(t *testing.T) {
	ws, extra := t.TempDir(), t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	mkTree(t, extra, map[string]string{"c.txt": "c"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	sub, err := tx.StageRoot(extra)
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("agent"), 0o644))
	must(t, sub.Files().WriteFile("c.txt", []byte("agent c"), 0o644))
	failpoint = func(s string) error {
		if s == "write-journal-commit" {
			return syscall.EIO
		}
		return nil
	}
	_, err = tx.Commit(ctx)
	failpoint = nil
	if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "the transaction stays open") || tx.Closed() || sub.Closed() {
		t.Fatalf("commit: %v (closed %v, root closed %v)", err, tx.Closed(), sub.Closed())
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit again: %v", err)
	}
	if readTree(t, ws)["a.txt"] != "agent" || readTree(t, extra)["c.txt"] != "agent c" {
		t.Fatalf("after the commit: %v %v", readTree(t, ws), readTree(t, extra))
	}
}
