package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayStrict: --strict exits 6 when the replay does not reproduce
// the recording (stdout, exit status, calls left unused), 0 when it does;
// without --strict the agent's own code stands.
func TestReplayStrict(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "hi.jbx")
	wantCode(t, ExitOK, "record", "-o", tape, "--", "sh", "-c", "echo hi")
	wantCode(t, ExitOK, "replay", "--strict", tape)

	_, errs := wantCode(t, ExitDiffers, "replay", "--strict", tape, "--", "sh", "-c", "echo bye")
	if !strings.Contains(errs, "stdout differs") {
		t.Errorf("stdout differs: %q", errs)
	}
	wantCode(t, ExitOK, "replay", tape, "--", "sh", "-c", "echo bye")
	_, errs = wantCode(t, ExitDiffers, "replay", "--strict", tape, "--", "sh", "-c", "echo hi; exit 3")
	if !strings.Contains(errs, "ended otherwise (exit 3, recorded exit 0)") { // it named the replay's end alone
		t.Errorf("exit status differs: %q", errs)
	}
	wantCode(t, 3, "replay", tape, "--", "sh", "-c", "echo hi; exit 3")

	// A recording with model calls the replay never makes.
	sample := filepath.Join(sampleTapes(t), "agent-run.jbx")
	_, errs = wantCode(t, ExitDiffers, "replay", "--strict", sample, "--", "true")
	if !strings.Contains(errs, "recorded calls never asked for") {
		t.Errorf("unused calls: %q", errs)
	}
}
