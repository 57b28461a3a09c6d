//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// queueHostCommand is an agent that asks the control API, as any agent
// can, to hold a tools/call of a "server" whose command line it chose
// (argv), then prints the answer.
func queueHostCommand(argv []string) []string {
	start, _ := json.Marshal(map[string]any{"server": "x", "argv": argv})
	post := `curl -s -H "Authorization: Bearer $JUKEBOX_CONTROL_TOKEN" -H 'Content-Type: application/json' `
	script := post + `-d '` + string(start) + `' "$JUKEBOX_CONTROL/v1/mcp/start" >/dev/null; ` +
		post + `-d '{"server":"x","session":1,"tool":"t","arguments":{},"approve":false}' "$JUKEBOX_CONTROL/v1/mcp/outbox"`
	return []string{"sh", "-c", script}
}

// hostCommandRun records queueHostCommand(argv) in the booth under
// policy (nil: no --mcp-policy), a person answering y; it returns what
// the agent was answered and the booth's result.
func hostCommandRun(t *testing.T, policy *mcp.Policy, argv []string) (string, *engine.BoothResult) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed as the agent's client")
	}
	var out bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: queueHostCommand(argv), Dir: t.TempDir(), Env: cleanEnv(),
			Stdout: &out, Stderr: io.Discard, MCPPolicy: policy,
			Booth: &engine.BoothOptions{Commit: engine.CommitAsk, Notice: io.Discard,
				Ask: func(sandbox.ChangeSet, []engine.RootChanges, []engine.OutboxResult, []tapefmt.SQLSession) (bool, error) {
					return true, nil
				}}},
		Tape: filepath.Join(t.TempDir(), "h.jbx")})
	if err != nil || res == nil || res.Booth == nil {
		t.Fatalf("record: %v", err)
	}
	return out.String(), res.Booth
}

// TestHostCommandNeedsUserPolicy: without a policy of the user's
// (--mcp-policy), a command line the agent queued through the control API
// is refused when it is queued, the agent told so, and it never runs on
// the host, though the person said y to the commit.
func TestHostCommandNeedsUserPolicy(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "pwned")
	answer, b := hostCommandRun(t, nil, []string{"sh", "-c", "echo pwned > " + marker})
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent's command ran on the host at the commit")
	}
	if !strings.Contains(answer, `"refused"`) || !strings.Contains(answer, "--mcp-policy") {
		t.Errorf("the agent was answered %q, want a refusal naming --mcp-policy", answer)
	}
	if len(b.Outbox) != 0 {
		t.Errorf("the outbox holds %+v", b.Outbox)
	}
}

// TestHostCommandUnderUserPolicy: a held call runs on the host at the
// commit only when the user's policy holds its tool and names, as the
// server's command, exactly the command line the session was started
// with; anything else is refused when it is queued.
func TestHostCommandUnderUserPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	argv := []string{"sh", "-c", "echo ran > " + marker}
	policy := func(command []string, d mcp.Decision) *mcp.Policy {
		return &mcp.Policy{Servers: map[string]mcp.ServerPolicy{"x": {Command: command, Tools: map[string]mcp.Decision{"t": d}}}}
	}
	cases := []struct {
		name    string
		policy  *mcp.Policy
		argv    []string
		refused string // in the answer, "" when held
	}{
		{"another command line", policy([]string{"sh", "-c", "true"}, mcp.Outbox), argv, "names no command"},
		{"no command named", policy(nil, mcp.Outbox), argv, "names no command"},
		{"the tool runs now", policy(argv, mcp.Run), argv, "does not hold"},
		{"the command and the tool held", policy(argv, mcp.Approve), argv, ""},
	}
	for _, c := range cases {
		os.Remove(marker)
		answer, b := hostCommandRun(t, c.policy, c.argv)
		_, err := os.Stat(marker)
		ran := err == nil
		switch {
		case c.refused != "" && (ran || len(b.Outbox) != 0 || !strings.Contains(answer, c.refused)):
			t.Errorf("%s: ran %v, outbox %+v, answer %q: want refused (%s)", c.name, ran, b.Outbox, answer, c.refused)
		case c.refused == "" && (!ran || len(b.Outbox) != 1 || !b.Outbox[0].Approve || !strings.Contains(answer, `"key"`)):
			t.Errorf("%s: ran %v, outbox %+v, answer %q: want held for approval, run at the yes", c.name, ran, b.Outbox, answer)
		}
	}
}
