package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestUsagelessStreamCapped is issue 29's "a streamed call whose answer
// carries no usage is shown as 0 tokens and $0.0000, and --max-cost let
// every such call through": the official openai SDK streaming without
// stream_options, against the scripted model, recorded by the jukebox
// binary under --max-cost. Each call is counted (a few hundred tokens at
// demo-small's rate), no one call's estimate reaches the cap, their sum
// does: the breaker stops the run (exit 7) long before the agent's 50
// rounds, and ls, cost and show mark the counted figures with "~".
func TestUsagelessStreamCapped(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "loop",
  "reply": {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo still waiting"}}]}}]}`))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	cmd := jukeboxCmd(t.Context(), dir, "record", "--max-cost", "0.002", "--upstream", "openai="+srv.OpenAIBaseURL(),
		"-o", "loop.jbx", "--", "node", filepath.Join(agents, "loop_agent.mjs"))
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-test", "AGENT_STREAM=1", "AGENT_MODEL=demo-small")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitTripped {
		t.Fatalf("record: %v, want exit %d (tripped)\nstdout:\n%s\nstderr:\n%s", err, ExitTripped, out.String(), errs.String())
	}
	if !strings.Contains(errs.String(), "circuit breaker tripped (cost): the run has cost ~$") || strings.Contains(out.String(), "gave up after 50 rounds") {
		t.Errorf("the cap did not stop the agent:\nstdout:\n%s\nstderr:\n%s", out.String(), errs.String())
	}
	tape := filepath.Join(dir, "loop.jbx")
	ls, _ := wantCode(t, ExitOK, "ls", dir)
	if !strings.Contains(ls, "~$0.00") {
		t.Errorf("ls does not mark the counted cost:\n%s", ls)
	}
	cost, _ := wantCode(t, ExitOK, "cost", tape)
	if !strings.Contains(cost, "~$0.00") || !strings.Contains(cost, "reported no usage (~)") {
		t.Errorf("cost:\n%s", cost)
	}
	// A token cap holds on the counted tokens too: each call is ~1,000.
	velocity, _ := wantCode(t, ExitTripped, "breaker", "--max-velocity", "2000", tape)
	if !strings.Contains(velocity, "(token-velocity): ~") {
		t.Errorf("breaker --max-velocity 2000:\n%s", velocity)
	}
	show, _ := wantCode(t, ExitOK, "show", tape)
	if !strings.Contains(show, "tok ~$0.0000") || !strings.Contains(show, "(no usage reported: counted)") {
		t.Errorf("show:\n%s", show)
	}
}

// TestShowPricesReportedUsage: show printed the cost of a call whose
// tokens it had counted, and none for a call of the same priced model
// whose answer reported its usage (cost and the turntable priced both).
func TestShowPricesReportedUsage(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := `import json, os, urllib.request
for stream in (False, True):
    body = json.dumps({"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": "hi"}]}).encode()
    urllib.request.urlopen(urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"Content-Type": "application/json"})).read()
`
	cmd := jukeboxCmd(t.Context(), dir, "record", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "t.jbx", "--", py, "-c", agent)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	show, _ := wantCode(t, ExitOK, "show", filepath.Join(dir, "t.jbx"), "--kind", "llm.response")
	lines := strings.Split(strings.TrimSpace(show), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], " tok $0.0") || strings.Contains(lines[0], "~") ||
		!strings.Contains(lines[1], "tok ~$0.0") {
		t.Errorf("show prices one call of the two:\n%s", show)
	}
}
