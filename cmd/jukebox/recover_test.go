package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
)

// TestRecoverThenSeal: a torn tape cannot be sealed; recover writes a whole
// tape of its kept frames that verifies and seals, and leaves the torn file
// as it was.
func TestRecoverThenSeal(t *testing.T) {
	dir := sampleTapes(t)
	torn := filepath.Join(dir, "torn.jbx")
	before, _ := os.ReadFile(torn)
	key := writeKey(t, dir, "k", "a-seal-key-of-some-length")
	wantCode(t, ExitBadTape, "seal", torn, "--key-file", key)

	out := filepath.Join(dir, "whole.jbx")
	wantCode(t, ExitOK, "recover", torn, "-o", out)
	tt, wt := openTape(t, torn), openTape(t, out)
	if wt.Recovered() != nil || wt.Len() != tt.Len() || wt.Head() != tt.Head() {
		t.Fatalf("recovered tape: %d frames, head %s; torn kept %d frames, head %s", wt.Len(), wt.Head().Short(), tt.Len(), tt.Head().Short())
	}
	wantCode(t, ExitOK, "verify", out)
	tapetest.Verify(t, out)
	wantCode(t, ExitOK, "seal", out, "--key-file", key)
	wantCode(t, ExitOK, "verify", out, "--key-file", key)
	tapetest.Verify(t, out)
	if after, _ := os.ReadFile(torn); !bytes.Equal(before, after) {
		t.Fatal("recover changed the torn tape")
	}
	wantCode(t, ExitUsage, "recover", filepath.Join(dir, "agent-run.jbx"), "-o", filepath.Join(dir, "x.jbx"))
	wantCode(t, ExitUsage, "recover", torn, "-o", out) // never overwritten, refused before (it was exit 1)
}
