package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestMCPOnlyRunIsNotNoModelCall: a run whose only traffic is MCP (its
// messages on the tape, no model call) is told so, not that the agent
// made no model call through jukebox as if nothing had been recorded.
func TestMCPOnlyRunIsNotNoModelCall(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mcp.jbx")
	must(t, tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord})
		for i := range 3 {
			msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call"})
			w.Append(0, tapefmt.MCPMessage{Server: "fs", Session: 1, Direction: tapefmt.MCPToServer, Message: msg})
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	}))
	var out strings.Builder
	networkNotes(&out, &engine.Result{Tape: path})
	if s := out.String(); strings.Contains(s, "If it does call a model") || !strings.Contains(s, "3 MCP messages") {
		t.Fatalf("notes for an MCP-only run:\n%s", s)
	}
}
