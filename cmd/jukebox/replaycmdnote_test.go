package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaySaysWhatItRuns: a replay without a command runs the one on
// the tape, and a tape is anyone's file: the command is shown (quoted)
// before it runs. Given a command after --, replay runs that one and
// says nothing of the recorded one.
func TestReplaySaysWhatItRuns(t *testing.T) {
	t.Parallel()
	tape := filepath.Join(t.TempDir(), "run.jbx")
	wantCode(t, ExitOK, "record", "-o", tape, "--", "sh", "-c", "echo from the tape")
	out, errs := wantCode(t, ExitOK, "replay", tape)
	if !strings.Contains(out, "from the tape") || !strings.Contains(errs, `jukebox: note: running the recorded command: sh -c "echo from the tape"`) {
		t.Errorf("replay of the recorded command: stdout %q, stderr %q", out, errs)
	}
	_, errs = wantCode(t, ExitOK, "replay", tape, "--", "sh", "-c", "echo from the tape")
	if strings.Contains(errs, "recorded command") {
		t.Errorf("replay with a command of its own still named the recorded one: %q", errs)
	}
	// Refused before anything runs: nothing is said to run. The note came
	// first, then the refusal.
	_, errs = wantCode(t, ExitUsage, "fork", tape, "--frame", "99999")
	if strings.Contains(errs, "running the recorded command") {
		t.Errorf("a fork refused before it ran said it ran the recorded command: %q", errs)
	}
}

// TestUsageErrorsTeach: a command line kong refuses is followed by the
// command's usage and where its help is, not the bare complaint alone.
func TestUsageErrorsTeach(t *testing.T) {
	t.Parallel()
	_, errs := wantCode(t, ExitUsage, "replay")
	if !strings.Contains(errs, `expected "<tape>"`) || !strings.Contains(errs, "usage: jukebox replay <tape> [<command> ...]") ||
		!strings.Contains(errs, "`jukebox replay --help` says more") {
		t.Errorf("jukebox replay with no tape: %q", errs)
	}
	_, errs = wantCode(t, ExitUsage, "export")
	if !strings.Contains(errs, "usage: jukebox export <command>") {
		t.Errorf("jukebox export with no format: %q", errs)
	}
}
