package tui

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestForkStoppedIsNotExitMinusOne: a fork stopped with ctrl+c in the
// booth ended before its agent had an exit status; the turntable said
// "fork done: exit -1" (and b "exit -1"), -1 being a command that could
// not start.
func TestForkStoppedIsNotExitMinusOne(t *testing.T) {
	r := &forkRun{res: &engine.Result{End: tapefmt.RunEnd{ExitCode: -1, Reason: tapefmt.ReasonInterrupted}, Calls: 1, Frames: 6}}
	if got := forkOutcome(r); !strings.HasPrefix(got, "fork done: stopped (interrupted), 1 call") {
		t.Errorf("forkOutcome: %q", got)
	}
	if got := forkState(r); got != "stopped (interrupted)" {
		t.Errorf("forkState: %q", got)
	}
	r.res.End = tapefmt.RunEnd{ExitCode: 3}
	if got := forkState(r); got != "exit 3" {
		t.Errorf("forkState of an exit: %q", got)
	}
}
