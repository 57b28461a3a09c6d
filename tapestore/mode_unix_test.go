//go:build unix

package tapestore

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// TestPulledTapeMode: a pulled tape was 0600 (os.CreateTemp's mode),
// where a recorded one is 0644 less the umask.
func TestPulledTapeMode(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	up, err := s.Upload(context.Background(), copyTape(t, t.TempDir(), "run.jbx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Download(context.Background(), up.Key, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p.Path)
	if err != nil {
		t.Fatal(err)
	}
	mask := syscall.Umask(0) // the test's process alone
	syscall.Umask(mask)
	if want := os.FileMode(0o644 &^ mask); st.Mode().Perm() != want {
		t.Errorf("a pulled tape is %v, want %v", st.Mode().Perm(), want)
	}
}
