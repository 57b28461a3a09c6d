package main

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestOnlyRunIsNotNoModelCall: a run whose only traffic is MCP (its
// messages on the tape) or the control API (the Python SDK's turns and
// transactions), with no model call, is told so, not that the agent made
// no model call through jukebox as if nothing had gone through it.
func TestOnlyRunIsNotNoModelCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		run  string
		res  engine.Result
		want string
	}{
		{"MCP-only", engine.Result{MCPMessages: 3}, "3 MCP messages"},
		{"SDK-only", engine.Result{ControlExchanges: 10}, "10 control-API exchanges"},
	} {
		var out strings.Builder
		networkNotes(&out, &c.res, false)
		if s := out.String(); strings.Contains(s, "If it does call a model") || !strings.Contains(s, c.want) {
			t.Errorf("notes for an %s run:\n%s", c.run, s)
		}
	}
}
