package sidecar

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestNoSidecarForAURL: a file beside a tape named by a URL is refused,
// and no folder named after the URL appears.
func TestNoSidecarForAURL(t *testing.T) {
	t.Chdir(t.TempDir())
	err := WriteFile("s3://b/p/run.jbx.d/markers.json", []byte("{}"))
	if !errors.Is(err, ErrRemote) {
		t.Errorf("WriteSidecarFile of a URL: %v", err)
	}
	if _, err := os.Stat("s3:"); err == nil {
		t.Error("a folder named after the URL was made")
	}
}

// TestSidecarFile: a tape reads the files of its sidecar folder; one that
// is not there wraps fs.ErrNotExist, and a name that is not a file name
// (a path out of the folder) is refused before anything is read.
func TestSidecarFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jbx")
	smallTape(t, path)
	if err := WriteFile(filepath.Join(Dir(path), "notes.json"), []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "secret"), []byte("not the tape's"), 0o644)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if b, err := Read(tp, "notes.json"); err != nil || string(b) != `{"a":1}` {
		t.Errorf("notes.json: %q, %v", b, err)
	}
	if _, err := Read(tp, "missing.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file that is not there: %v", err)
	}
	for _, name := range []string{"../secret", "..", "", "a/b", `..\secret`} {
		if b, err := Read(tp, name); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Read(%q): %q, %v (want refused)", name, b, err)
		}
	}
}

// TestLinkedFolderRefused: a link standing at a tape's sidecar folder
// (to another folder) is neither written through nor read from.
func TestLinkedFolderRefused(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "run.jbx")
	smallTape(t, path)
	os.WriteFile(filepath.Join(elsewhere, "match.json"), []byte(`{"ignore":["messages"]}`), 0o644)
	if err := os.Symlink(elsewhere, Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(Dir(path), "markers.json"), []byte("[]")); !errors.Is(err, ErrNotFolder) {
		t.Errorf("a write through the link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "markers.json")); err == nil {
		t.Error("a file was written into the linked folder")
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if b, err := Read(tp, "match.json"); !errors.Is(err, ErrNotFolder) {
		t.Errorf("a read through the link: %q, %v", b, err)
	}
}

// smallTape writes a tape of a run start alone at path.
func smallTape(t *testing.T, path string) {
	t.Helper()
	if err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		_, err := w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
