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

// TestSDKOnlyRunIsNotNoModelCall: a run whose only traffic is the
// control API (the Python SDK's turns and transactions, no model call) is
// told so, not that the agent made no model call through jukebox as if
// nothing had gone through it.
func TestSDKOnlyRunIsNotNoModelCall(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	networkNotes(&out, &engine.Result{ControlExchanges: 10})
	if s := out.String(); strings.Contains(s, "If it does call a model") || !strings.Contains(s, "10 control-API exchanges") {
		t.Fatalf("notes for an SDK-only run:\n%s", s)
	}
}
