//go:build unix

package tapefmt

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCloseUnlocksWhileAChildHoldsTheFile: a child another thread of the
// process is starting holds a copy of the tape's file from its fork until
// its exec; the writer's Close lets the lock go all the same (seen on CI:
// push left a tape just recorded as "still being recorded").
func TestCloseUnlocksWhileAChildHoldsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jbx")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	child, err := unix.Dup(int(w.dst.(*os.File).Fd())) // the child's copy, as fork makes it
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(child)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if recording(f) {
		t.Error("the writer's lock is held after Close")
	}
}
