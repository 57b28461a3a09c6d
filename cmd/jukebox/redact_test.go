package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
)

// TestRedactFlags: --redact and --redact-file mask the agent's output on
// the tape; a pattern that does not compile is exit 2 naming it; a replay
// of a command whose arguments lost a secret says to give the command.
func TestRedactFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets.txt")
	must(t, os.WriteFile(file, []byte("# card numbers\n\n4111(-\\d{4}){3}\n"), 0o600))
	tape := filepath.Join(dir, "r.jbx")
	script := "echo card $CARD; echo code $PLANT"
	t.Setenv("PLANT", "ZX-PLANT-9")
	t.Setenv("CARD", "4111-1111-1111-1111")
	out, _ := wantCode(t, ExitOK, "record", "-o", tape, "--redact", `ZX-PLANT-\d`, "--redact-file", file, "--", "sh", "-c", script)
	if !strings.Contains(out, "card 4111-1111-1111-1111") {
		t.Fatalf("the agent's own output was masked: %q", out)
	}
	tapetest.NoSecrets(t, tape, "ZX-PLANT-9", "4111-1111-1111-1111")
	// Nothing in the command matched: it replays as recorded, its output
	// compared masked.
	out, _ = wantCode(t, ExitOK, "replay", "--strict", tape)
	if !strings.Contains(out, "code ZX-PLANT-9") {
		t.Errorf("replay: %q", out)
	}

	_, errs := wantCode(t, ExitUsage, "record", "-o", filepath.Join(dir, "bad.jbx"), "--redact", "(", "--", "true")
	if !strings.Contains(errs, `--redact pattern "("`) {
		t.Errorf("a bad pattern: %q", errs)
	}

	masked := filepath.Join(dir, "m.jbx")
	wantCode(t, ExitOK, "record", "-o", masked, "--", "sh", "-c", "echo hi", "--api-key", "sk-123")
	_, errs = wantCode(t, ExitUsage, "replay", masked)
	if !strings.Contains(errs, "give the command after --") {
		t.Errorf("replay of a redacted command: %q", errs)
	}
	wantCode(t, ExitOK, "replay", masked, "--", "sh", "-c", "echo hi")
}
