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
	err := c.Run(&Env{Stdout: &out, Stderr: &out})
	if err == nil || codeFor(err) != ExitUsage || !strings.Contains(err.Error(), "jukebox show") {
		t.Fatalf("play to a buffer: %v (exit %d)", err, codeFor(err))
	}
}

func TestPlayValidate(t *testing.T) {
	c := &PlayCmd{Tapes: []string{"a", "b", "c"}}
	if err := c.Validate(); err == nil {
		t.Fatal("three tapes accepted")
	}
	c = &PlayCmd{Tapes: []string{"a"}, Upstream: []string{"nonsense"}}
	if err := c.Validate(); err == nil {
		t.Fatal("a bad --upstream accepted")
	}
}
