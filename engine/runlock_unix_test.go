//go:build unix

package engine

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSweepRunFolders: a sweep removes a run folder whose lock nobody
// holds, and nothing else: not a held one, not one without the lock
// file (an earlier release's), not a link to a folder or a file of the
// name, not a folder of another name.
func TestSweepRunFolders(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	parent := t.TempDir()
	mk := func(name string, lock bool) string {
		dir := filepath.Join(parent, name)
		must(os.Mkdir(dir, 0o755))
		must(os.WriteFile(filepath.Join(dir, "ca-bundle.pem"), []byte("certs"), 0o644))
		if lock {
			must(os.WriteFile(filepath.Join(dir, runLock), nil, 0o600))
		}
		return dir
	}
	orphan := mk("jukebox-run-orphan", true)
	old := mk("jukebox-run-old", false)
	other := mk("other-run", true)
	live := filepath.Join(parent, "jukebox-run-live")
	must(os.Mkdir(live, 0o755))
	held := holdRunFolder(live)
	if held == nil {
		t.Fatal("holdRunFolder could not lock a new folder")
	}
	defer held.Close()
	elsewhere := t.TempDir()
	must(os.WriteFile(filepath.Join(elsewhere, runLock), nil, 0o600))
	must(os.Symlink(elsewhere, filepath.Join(parent, "jukebox-run-link")))
	must(os.WriteFile(filepath.Join(parent, "jukebox-run-file"), []byte("x"), 0o644))
	// A FIFO under the lock's name: opening it to read would wait for a
	// writer for ever.
	fifo := mk("jukebox-run-fifo", false)
	must(syscall.Mkfifo(filepath.Join(fifo, runLock), 0o600))

	if n := sweepRunFolders(parent); n != 1 {
		t.Errorf("the sweep removed %d folders, want 1", n)
	}
	if _, err := os.Lstat(orphan); !os.IsNotExist(err) {
		t.Errorf("the orphaned run folder is still there (%v)", err)
	}
	for _, p := range []string{old, other, live, elsewhere, fifo, filepath.Join(elsewhere, runLock),
		filepath.Join(parent, "jukebox-run-link"), filepath.Join(parent, "jukebox-run-file")} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("the sweep removed %s: %v", p, err)
		}
	}
	// Once the live run lets its lock go (its process ended), its folder
	// goes in the next sweep.
	held.Close()
	if n := sweepRunFolders(parent); n != 1 {
		t.Errorf("after the live run ended, the sweep removed %d folders, want 1", n)
	}
	if _, err := os.Lstat(live); !os.IsNotExist(err) {
		t.Errorf("the ended run's folder is still there (%v)", err)
	}
}
