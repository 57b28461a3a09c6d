package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
)

// TestReplayMatchFlags: bad rules are refused before the agent starts
// (exit 2) and are not remembered; good ones are remembered beside the
// tape, with --remember-rules, once the run has checked them.
func TestReplayMatchFlags(t *testing.T) {
	tape := filepath.Join(sampleTapes(t), "agent-run.jbx")
	side := sidecar.Dir(tape)

	_, errs := wantCode(t, ExitUsage, "replay", "--ignore", "messages.*.contnt", tape, "--", "true")
	if !strings.Contains(errs, "messages.*.contnt") || !strings.Contains(errs, "content, role") {
		t.Errorf("typo in an ignore path: %q", errs)
	}
	if _, err := os.Stat(side); err == nil {
		t.Errorf("rules that were refused were remembered in %s", side)
	}
	_, errs = wantCode(t, ExitUsage, "replay", "--scrub", "(", tape, "--", "true")
	if !strings.Contains(errs, "--scrub") {
		t.Errorf("bad --scrub: %q", errs)
	}
	cfg := filepath.Join(t.TempDir(), "rules.json")
	os.WriteFile(cfg, []byte(`{"ignores": ["x"]}`), 0o644)
	_, errs = wantCode(t, ExitUsage, "replay", "--match-config", cfg, tape, "--", "true")
	if !strings.Contains(errs, cfg) || !strings.Contains(errs, "ignores") {
		t.Errorf("unknown key in --match-config: %q", errs)
	}

	os.WriteFile(cfg, []byte(`{"scrub": [{"pattern": "\\d{4}-\\d\\d-\\d\\d"}]}`), 0o644)
	_, errs = wantCode(t, ExitOK, "replay", "--ignore", "messages.*.content", "--match-config", cfg, "--remember-rules", tape, "--", "true")
	if !strings.Contains(errs, "remembered in "+side) {
		t.Errorf("no word of the remembered rules: %q", errs)
	}
	kept, err := reqmatch.Remembered(side)
	if err != nil || len(kept.Ignore) != 1 || kept.Ignore[0] != "messages.*.content" || len(kept.Scrub) != 1 || kept.Scrub[0].With != reqmatch.DefaultScrubWith {
		t.Fatalf("remembered rules: %+v, %v", kept, err)
	}
	// A damaged rules file names itself.
	os.WriteFile(filepath.Join(side, reqmatch.FileName), []byte("{"), 0o644)
	_, errs = wantCode(t, ExitUsage, "replay", tape, "--", "true")
	if !strings.Contains(errs, reqmatch.FileName) {
		t.Errorf("damaged rules file: %q", errs)
	}
}
