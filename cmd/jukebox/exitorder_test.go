package main

import (
	"io"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestExitPrecedence: an unreadable tape (3) over an interrupted booth
// run (130) over refused entries (8) over the agent's own code, as
// README's exit-code table says. Before, an interrupted run exited with
// the agent's code (255 for the agent the booth killed).
func TestExitPrecedence(t *testing.T) {
	t.Parallel()
	agent := tapefmt.RunEnd{ExitCode: 9}
	for _, c := range []struct {
		name string
		res  engine.Result
		want int
	}{
		{"tape", engine.Result{End: agent, Unreadable: "torn", Booth: &engine.BoothResult{Interrupted: true, Refused: true}}, ExitBadTape},
		{"interrupted", engine.Result{End: agent, Booth: &engine.BoothResult{Interrupted: true, Refused: true, Kept: true}}, ExitInterrupted},
		{"refused", engine.Result{End: agent, Booth: &engine.BoothResult{Refused: true, Kept: true}}, ExitRefused},
		{"agent", engine.Result{End: agent, Booth: &engine.BoothResult{Kept: true}}, 9},
	} {
		env := &Env{Stdout: io.Discard, Stderr: io.Discard}
		if got := codeFor(finishRun(env, &c.res, false, "")); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// TestAgentEndReads: "ahead of the agent's killed by SIGTERM" read as a
// slip; an end other than an exit is said as one.
func TestAgentEndReads(t *testing.T) {
	for end, want := range map[tapefmt.RunEnd]string{
		{ExitCode: 1}:           "exit 1",
		{Signal: "SIGTERM"}:     "end (killed by SIGTERM)",
		{Error: "no such file"}: "end (failed: no such file)",
	} {
		if got := agentEnd(end); got != want {
			t.Errorf("%+v: %q, want %q", end, got, want)
		}
	}
}
