package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestPlayNeedsATerminal: with stdout a pipe or file, play refuses with
// exit 2 and points at jukebox show.
func TestPlayNeedsATerminal(t *testing.T) {
	var out bytes.Buffer
	c := &PlayCmd{Tapes: []string{"../../testdata/tapes/agent-run.jbx"}, Theme: "diner"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	err := c.Run(t.Context(), &Env{Stdout: &out, Stderr: &out})
	if err == nil || codeFor(err) != ExitUsage || !strings.Contains(err.Error(), "jukebox show") {
		t.Fatalf("play to a buffer: %v (exit %d)", err, codeFor(err))
	}
}

func TestPlayValidate(t *testing.T) {
	c := &PlayCmd{Tapes: []string{"a", "b", "c"}}
	if err := c.Validate(); err == nil {
		t.Fatal("three tapes accepted")
	}
	// A bad --upstream is refused while kong reads the command line
	// (upstreamsMapper), before Validate.
	code, _, errs := jb(t, "play", "--upstream", "nonsense", "../../testdata/tapes/agent-run.jbx")
	if code != ExitUsage || !strings.Contains(errs, "--upstream") {
		t.Fatalf("a bad --upstream accepted: exit %d\n%s", code, errs)
	}
	// --frame past the tape's end, or below 0, names the range.
	for _, f := range []string{"98", "-1"} {
		code, _, errs = jb(t, "play", "--frame="+f, "../../testdata/tapes/agent-run.jbx")
		if code != ExitUsage || !strings.Contains(errs, "has frames 0 to 97") {
			t.Errorf("--frame %s: exit %d\n%s", f, code, errs)
		}
	}
}
