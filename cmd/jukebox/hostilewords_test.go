package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestTapeWordsReachNoTerminalRaw: a tape whose run.end signal, trip rule
// and recorded folder hold escape sequences (a title set, the screen
// cleared) had them printed raw by ls (the EXIT column) and by replay's
// note naming the folder the recording ran in.
func TestTapeWordsReachNoTerminalRaw(t *testing.T) {
	const esc = "\x1b]0;owned\x07\x1b[2J\x1b[31m"
	dir := t.TempDir()
	cwd := filepath.Join(t.TempDir(), "ws"+esc)
	must(t, os.Mkdir(cwd, 0o755))
	path := filepath.Join(dir, "hostile.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	must(t, err)
	_, err = w.Append(0, tapefmt.RunStart{Argv: []string{"sh", "-c", "exit 3"}, Cwd: cwd})
	must(t, err)
	_, err = w.Append(0, tapefmt.BreakerTrip{Rule: "cost" + esc, Reason: "r"})
	must(t, err)
	_, err = w.Append(0, tapefmt.RunEnd{ExitCode: 137, Signal: "SIGKILL" + esc})
	must(t, err)
	must(t, w.Close())
	out, _ := wantCode(t, ExitOK, "ls", dir)
	if strings.Contains(out, "\x1b") || strings.Contains(out, "\x07") {
		t.Errorf("ls printed the tape's control characters raw: %q", out)
	}
	t.Chdir(t.TempDir()) // elsewhere: the note names the recorded folder
	_, errs := wantCode(t, 3, "replay", path)
	if !strings.Contains(errs, "the recording ran in") || strings.Contains(errs, "\x1b") || strings.Contains(errs, "\x07") {
		t.Errorf("replay printed the tape's control characters raw: %q", errs)
	}
}
