package main

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestPrintOutboxQuoted: how each held call went is said with the
// server's, the tool's and the error's bytes quoted: the agent chose the
// first two and the server wrote the last, and none may move the cursor,
// recolour or hide what follows.
func TestPrintOutboxQuoted(t *testing.T) {
	evil := "\x1b[8m\x1b]0;pwned\x07\u202e"
	var b strings.Builder
	printOutbox(&b, []engine.OutboxResult{
		{Server: "s" + evil, Tool: "t" + evil, Key: "k" + evil, Kept: true},
		{Server: "s" + evil, Tool: "t" + evil, Key: "k", Ran: true},
		{Server: "s" + evil, Tool: "t" + evil, Key: "k", Ran: true, Error: "e" + evil},
		{Server: "s" + evil, Tool: "t" + evil, Key: "k"},
	}, "tx-1"+evil)
	out := b.String()
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Errorf("held-call lines print the agent's escape sequences raw: %q", out)
	}
	if strings.Count(out, "\n") != 4 {
		t.Errorf("want 4 lines: %q", out)
	}
}
