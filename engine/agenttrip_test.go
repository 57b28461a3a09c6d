package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// twoAgents is an agent process of two agents, coder and planner, each
// telling its calls apart by X-Jukebox-Agent: coder calls first, then
// planner three times. It prints each call's status and error body, and
// exits 0 by itself.
const twoAgents = `
import json, os, urllib.request, urllib.error
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
for agent in ["coder", "planner", "planner", "planner", "coder"]:
    body = json.dumps({"model": "demo-large", "max_tokens": 100,
                       "messages": [{"role": "user", "content": "next step"}]}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json",
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "X-Jukebox-Agent": agent})
    try:
        with urllib.request.urlopen(req) as r:
            print(agent, r.status, flush=True)
    except urllib.error.HTTPError as e:
        print(agent, e.code, e.read().decode(), flush=True)
print("done", flush=True)
`

// TestAgentTripRefusesThatAgentOnly: an agent past its own cap has its
// calls refused with an error carrying the stable code
// jukebox_breaker_tripped and the rule, while the other agent's calls go
// on and the process ends by itself; the run's result carries the trip
// (record exits 7 at the end). With TripAll the same trip refuses every
// call.
func TestAgentTripRefusesThatAgentOnly(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	for _, all := range []bool{false, true} {
		srv := startModel(t, nil)
		dir := t.TempDir()
		script := filepath.Join(dir, "agents.py")
		if err := os.WriteFile(script, []byte(twoAgents), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errs bytes.Buffer
		// demo-large, at most 100 output tokens: $0.0015 and more, past
		// coder's own cap of $0.001 before its first call goes out.
		limits := breaker.Limits{MaxCost: 1, TripAll: all, Agents: map[string]breaker.Limits{"coder": {MaxCost: 0.001}}}
		res, err := engine.Record(context.Background(), engine.RecordOptions{
			RunOptions: engine.RunOptions{Argv: []string{py, script}, Dir: dir, Env: append(cleanEnv(), "OPENAI_API_KEY="+secretKey),
				Stdout: &out, Stderr: &errs, Limits: limits},
			Tape: filepath.Join(dir, "agents.jbx"), Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Breaker == nil || res.Breaker.Agent != "coder" || res.Breaker.Rule != breaker.RuleCost {
			t.Fatalf("trip all %v: breaker %+v\n%s%s", all, res.Breaker, out.String(), errs.String())
		}
		lines := strings.FieldsFunc(out.String(), func(r rune) bool { return r == '\n' })
		if len(lines) != 6 || lines[5] != "done" || res.End.ExitCode != 0 {
			t.Fatalf("trip all %v: the agent did not end by itself (exit %d):\n%s", all, res.End.ExitCode, out.String())
		}
		planner := strings.Count(out.String(), "planner 200")
		if want := map[bool]int{false: 3, true: 0}[all]; planner != want {
			t.Errorf("trip all %v: %d of planner's calls answered, want %d:\n%s", all, planner, want, out.String())
		}
		for _, l := range []string{lines[0], lines[4]} {
			var body struct {
				Error struct{ Type, Code, Rule, Agent, Message string }
			}
			_, js, _ := strings.Cut(l, " 400 ")
			if err := json.Unmarshal([]byte(js), &body); err != nil || body.Error.Code != engine.TripCode ||
				body.Error.Type != engine.TripCode || body.Error.Rule != "cost" || body.Error.Agent != "coder" ||
				!strings.Contains(body.Error.Message, "agent coder: its calls have cost $0.0000 ") {
				t.Errorf("trip all %v: coder's refused call: %s (%v)", all, l, err)
			}
		}
	}
}
