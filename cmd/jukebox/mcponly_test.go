package main

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestMCPOnlyRunIsNotNoModelCall: a run whose only traffic is MCP (its
// messages on the tape, no model call) is told so, not that the agent
// made no model call through jukebox as if nothing had been recorded.
func TestMCPOnlyRunIsNotNoModelCall(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	networkNotes(&out, &engine.Result{MCPMessages: 3})
	if s := out.String(); strings.Contains(s, "If it does call a model") || !strings.Contains(s, "3 MCP messages") {
		t.Fatalf("notes for an MCP-only run:\n%s", s)
	}
}
