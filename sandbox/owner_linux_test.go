package sandbox

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRunningTransactionIsNotOpened: a transaction is owned by the
// process that began it until it is decided. Seen: booth rollback, run
// while the record --booth that began the transaction was still going,
// discarded its staging area (the run then failed at its commit), and
// booth status called the run's live PostgreSQL work lost. Open,
// Discard and Recover leave a running transaction alone, List says it is
// Running, and once its owner is gone (the process ended) it opens.
func TestRunningTransactionIsNotOpened(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	must(t, tx.Files().WriteFile("a.txt", []byte("staged"), 0o644))
	if _, err := Open(ws, tx.ID(), Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("open of a running transaction: %v, want ErrInUse", err)
	}
	if err := Discard(ws, tx.ID(), Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("discard of a running transaction: %v, want ErrInUse", err)
	}
	infos, err := List(ws, Options{})
	must(t, err)
	if len(infos) != 1 || !infos[0].Running {
		t.Fatalf("list: %+v, want it running", infos)
	}
	// The process that began it ends: the kernel lets the lock go.
	tx.owner.Close()
	tx.owner = nil
	infos, err = List(ws, Options{})
	must(t, err)
	if len(infos) != 1 || infos[0].Running {
		t.Fatalf("list: %+v, want it kept, not running", infos)
	}
	again, err := Open(ws, tx.ID(), Options{})
	must(t, err)
	if _, err := Open(ws, tx.ID(), Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("a second open while booth commit holds it: %v, want ErrInUse", err)
	}
	if _, err := again.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if again.owner != nil {
		t.Error("the owner lock is held after the commit")
	}
}

// TestReleaseWhileAChildHoldsTheOwnerFile: a child another thread of
// the process is starting holds a copy of the owner file from its fork
// until its exec; Release lets the lock go all the same. Seen on CI: a
// booth run's transaction kept open was "in use" to the Open after it.
func TestReleaseWhileAChildHoldsTheOwnerFile(t *testing.T) {
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	child, err := unix.Dup(int(tx.owner.Fd())) // the child's copy, as fork makes it
	must(t, err)
	defer unix.Close(child)
	tx.Release()
	again, err := Open(ws, tx.ID(), Options{})
	if err != nil {
		t.Fatalf("open after release, a copy of the owner file still open: %v", err)
	}
	again.Release()
}
