//go:build linux

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileIfGivesTheRealSide: WriteFileIf's check is given what the
// write's own lookup found on the real side (so that a caller's conflict
// check needs no lstat of its own), nil where the lookup did not look at
// the real file of that name, and a refusal stages nothing.
func TestWriteFileIfGivesTheRealSide(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"real.txt": "12345", "dir/": "", "link": "-> real.txt"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(t.Context())
	files := tx.Files()
	seen := func(name string) *RealFile {
		t.Helper()
		var got *RealFile
		called := false
		must(t, files.WriteFileIf(name, []byte("x"), 0o644, func(r *RealFile) error {
			got, called = r, true
			return nil
		}))
		if !called {
			t.Fatalf("%s: check not called", name)
		}
		return got
	}
	if r := seen("real.txt"); r == nil || !r.Exists || r.Info.Size() != 5 {
		t.Errorf("a real file: %+v, want it with its 5 bytes", r)
	}
	if r := seen("real.txt"); r != nil {
		t.Errorf("a file staged already: %+v, want nil (the lookup stopped at the staged copy)", r)
	}
	if r := seen("new.txt"); r == nil || r.Exists {
		t.Errorf("a new file: %+v, want it missing", r)
	}
	if r := seen("link"); r != nil {
		t.Errorf("a symlink (the write goes to its target): %+v, want nil", r)
	}
	if r := seen("dir/new.txt"); r == nil || r.Exists {
		t.Errorf("a new file in a real folder: %+v, want it missing", r)
	}
	refused := errors.New("changed since")
	err = files.WriteFileIf("other.txt", []byte("x"), 0o644, func(*RealFile) error { return refused })
	if err != refused {
		t.Fatalf("a refusal: %v, want the check's error as it is", err)
	}
	if _, err := os.Lstat(filepath.Join(tx.upper, "other.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused write was staged: %v", err)
	}
	// A missing parent: the check runs, and the write fails as WriteFile's.
	err = files.WriteFileIf("gone/f.txt", []byte("x"), 0o644, func(r *RealFile) error {
		if r == nil || r.Exists {
			t.Errorf("under a missing folder: %+v, want it missing", r)
		}
		return nil
	})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("under a missing folder: %v, want ErrNotExist", err)
	}
}
