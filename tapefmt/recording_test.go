//go:build unix

package tapefmt_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRecordingWhileTheWriterLives: a torn tape is still being recorded
// while its writer holds it, and not once the writer closed it, or its
// process ended without closing it.
func TestRecordingWhileTheWriterLives(t *testing.T) {
	if dying := os.Getenv("TAPEFMT_WRITE_AND_DIE"); dying != "" { // the writer that dies
		if w, err := tapefmt.Create(dying, tapefmt.Options{}); err == nil {
			w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
			os.Exit(3)
		}
		os.Exit(1)
	}
	path := filepath.Join(t.TempDir(), "live.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}}); err != nil {
		t.Fatal(err)
	}
	if !tapefmt.Recording(path) {
		t.Fatal("a tape whose writer is open is not recording")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if tapefmt.Recording(path) {
		t.Fatal("a closed tape is still recording")
	}
	// Its lock held a moment longer, as by a child forked before the
	// writer closed the file and not yet exec'd (seen on CI: push left a
	// finished tape as "still being recorded"): finished all the same.
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	if tapefmt.Recording(path) {
		t.Fatal("a closed tape whose lock another file holds is still recording")
	}
	unix.Flock(int(held.Fd()), unix.LOCK_UN)
	if tapefmt.Recording(filepath.Join(t.TempDir(), "none.jbx")) {
		t.Fatal("no file is recording")
	}
	// A writer killed mid-run leaves a torn tape that is not recording.
	dead := filepath.Join(t.TempDir(), "dead.jbx")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRecordingWhileTheWriterLives$")
	cmd.Env = append(os.Environ(), "TAPEFMT_WRITE_AND_DIE="+dead)
	if err := cmd.Run(); err == nil {
		t.Fatal("the writer was meant to die with exit 3")
	}
	if _, err := os.Stat(dead); err != nil {
		t.Fatal(err)
	}
	if tapefmt.Recording(dead) {
		t.Fatal("the tape of a dead writer is still recording")
	}
}
