package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTapeReplacedDuringTheRun: an agent outside the booth can reach the
// tape's folder. Seen: it recorded a run of its own, renamed that tape
// over the one being recorded (whose path it is told, JUKEBOX_TAPE), and
// jukebox read the forgery back, said it recorded the run, and exited 0.
// The file at the path is now checked to be the tape this run wrote: exit
// 3, naming the path and what happened.
func TestTapeReplacedDuringTheRun(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake.jbx")
	wantCode(t, ExitOK, "record", "-o", fake, "--", "sh", "-c", "echo all good")
	tape := filepath.Join(dir, "run.jbx")
	code, _, errs := jb(t, "record", "-o", tape, "--", "sh", "-c",
		`echo doing something else; cp "$1" "$JUKEBOX_TAPE.new" && mv "$JUKEBOX_TAPE.new" "$JUKEBOX_TAPE"`, "agent", fake)
	if code != ExitBadTape || !strings.Contains(errs, tape) || !strings.Contains(errs, "replaced") || !strings.Contains(errs, "another tape") || strings.Contains(errs, "recorded ") {
		t.Fatalf("exit %d, want %d naming %s as replaced, no \"recorded\":\n%s", code, ExitBadTape, tape, errs)
	}
	if _, err := os.Stat(tape); err != nil {
		t.Fatal(err) // the file there is left as it is
	}
}
