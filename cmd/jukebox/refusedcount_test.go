package main

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
)

// TestRefusedExitCountsAllowWrite: a refusal in an --allow-write folder
// is counted in exit 8's message ("refused entries: 0" was printed when
// the only refusal was there).
func TestRefusedExitCountsAllowWrite(t *testing.T) {
	res := &engine.Result{Booth: &engine.BoothResult{Tx: "tx-1", Kept: true, Refused: true,
		Changes: sandbox.ChangeSet{Refused: []sandbox.Refusal{{Path: "p", Kind: sandbox.RefusedFIFO}}},
		Roots: []engine.RootChanges{{Root: "/cache", Changes: sandbox.ChangeSet{Refused: []sandbox.Refusal{
			{Path: "q", Kind: sandbox.RefusedFIFO}, {Path: "r", Kind: sandbox.RefusedFIFO}}}}}}}
	err := refusedExit(res)
	if err == nil || !strings.Contains(err.Error(), "refused entries: 3;") {
		t.Errorf("refusedExit: %v, want 3 refused entries counted", err)
	}
}
