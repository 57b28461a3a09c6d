package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestRecordMaxRepeat: record --max-repeat stops an official-SDK agent
// stuck in a tool loop with exit 7, ahead of the agent's own code, which
// is still printed; --json carries the trip.
func TestRecordMaxRepeat(t *testing.T) {
	agents := testenv.RequireNode(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "loop",
  "reply": {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo still waiting"}}]}}]}`))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	defer srv.Close()
	doc := jsonDoc(t)
	t.Chdir(t.TempDir())
	t.Setenv("OPENAI_API_KEY", "sk-test")
	out, errs := wantCode(t, ExitTripped, "record", "--json", "--max-repeat", "3", "--upstream", "openai="+srv.OpenAIBaseURL(),
		"-o", "loop.jbx", "--", "node", filepath.Join(agents, "loop_agent.mjs"))
	checkShape(t, doc, "record", out, map[string]map[string]bool{})
	var res struct {
		Breaker struct {
			Rule     string   `json:"rule"`
			Evidence []uint64 `json:"evidence"`
		} `json:"breaker"`
	}
	must(t, json.Unmarshal([]byte(out), &res))
	if res.Breaker.Rule != "repeat" || len(res.Breaker.Evidence) != 6 {
		t.Errorf("breaker in --json: %+v", res.Breaker)
	}
	if !strings.Contains(errs, "circuit breaker tripped (repeat)") || !strings.Contains(errs, "ahead of the agent's exit 1") {
		t.Errorf("stderr: %s", errs)
	}
	// ls names the tripped run and says why.
	out, _ = wantCode(t, ExitOK, "ls", ".")
	if !strings.Contains(out, "TRIPPED (repeat)") || !strings.Contains(out, "TRIPPED loop: tool run_shell called with the same arguments") {
		t.Errorf("ls:\n%s", out)
	}
	// A track: the config's limits for runs named "looper" hold a run of
	// that name, with the run-wide limit far off.
	cfg := filepath.Join(t.TempDir(), "tracks.json")
	must(t, os.WriteFile(cfg, []byte(`{"max_repeat": 50, "tracks": {"looper": {"max_repeat": 2}}}`), 0o644))
	out, _ = wantCode(t, ExitTripped, "record", "--json", "--name", "looper", "--breaker-config", cfg, "--upstream", "openai="+srv.OpenAIBaseURL(),
		"-o", "track.jbx", "--", "node", filepath.Join(agents, "loop_agent.mjs"))
	must(t, json.Unmarshal([]byte(out), &res))
	if res.Breaker.Rule != "repeat" || len(res.Breaker.Evidence) != 4 {
		t.Errorf("the track's --max-repeat 2: %+v", res.Breaker)
	}
}

// TestRecordMaxSemanticRepeat: --max-semantic-repeat, which only the
// breaker config and the SDK had, stops a run whose model says the same
// thing the N-th time, with exit 7 and the rule named.
func TestRecordMaxSemanticRepeat(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "same",
  "reply": {"text": "The migration is still running, please check again in a few minutes."}}]}`))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := `for i in 1 2 3 4 5; do curl -sS -X POST "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"m","messages":[{"role":"user","content":"Is the migration done?"}]}'; echo; done`
	_, errs, code := jbIn(dir, nil, "record", "--max-semantic-repeat", "3", "--upstream", "openai="+srv.OpenAIBaseURL(),
		"-o", "t.jbx", "--", "sh", "-c", agent)
	if code != ExitTripped || !strings.Contains(errs, "circuit breaker tripped (semantic-repeat)") {
		t.Errorf("record --max-semantic-repeat 3: exit %d\n%s", code, errs)
	}
}

// TestTrippedRunReplays: a call the breaker refused gets the same answer
// in replay (400 and its JSON error, whole): it was cut off there, which
// curl reported as "transfer closed with outstanding read data" (exit 18)
// and Python's http.client as IncompleteRead, so replay --strict of a
// tripped run failed.
func TestTrippedRunReplays(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "fact", "reply": {"text": "A fact."}}]}`))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := `for i in 1 2; do curl -sS -w ' status %{http_code}' -X POST "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"gpt-4o-mini","max_tokens":40,"messages":[{"role":"user","content":"Tell me a fact."}]}'; echo " curl exit $?"; done`
	out, errs, code := jbIn(dir, nil, "record", "--max-cost", "0.000001", "--upstream", "openai="+srv.OpenAIBaseURL(),
		"-o", "t.jbx", "--", "sh", "-c", agent)
	// The summary counted the refused calls as recorded ones, where cost
	// lists them apart.
	if code != ExitTripped || !strings.Contains(out, `"code":"jukebox_breaker_tripped"`) || !strings.Contains(out, "status 400 curl exit 0") ||
		!strings.Contains(errs, "recorded 2 calls (2 refused by the circuit breaker, not sent)") {
		t.Fatalf("record --max-cost: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = jbIn(dir, nil, "replay", "--strict", "t.jbx")
	if code != ExitOK || !strings.Contains(out, "status 400 curl exit 0") {
		t.Errorf("replay --strict of the tripped run: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestBreakerFlags: limits that make no sense (zero, negative, NaN,
// infinite) are exit 2 before the agent starts, naming the flag.
func TestBreakerFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	must(t, os.WriteFile(bad, []byte(`{"max_cost_usd": 0}`), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-cost", "0"}, "--max-cost 0: a limit must be a finite number above 0"},
		{[]string{"--max-cost=-1"}, "--max-cost -1: a limit must be a finite number above 0"},
		{[]string{"--max-cost", "NaN"}, "--max-cost NaN: a limit must be a finite number above 0"},
		{[]string{"--max-cost", "Inf"}, "--max-cost +Inf: a limit must be a finite number above 0"},
		{[]string{"--max-cost=-Inf"}, "--max-cost -Inf: a limit must be a finite number above 0"},
		{[]string{"--unknown-model-rate", "NaN"}, "--unknown-model-rate NaN"},
		{[]string{"--max-velocity", "NaN"}, "--max-velocity NaN"},
		{[]string{"--max-velocity", "$Inf"}, "--max-velocity $Inf"},
		{[]string{"--max-repeat", "1"}, "--max-repeat 1: a repeat is seen at least twice"},
		{[]string{"--max-semantic-repeat", "1"}, "--max-semantic-repeat 1: a repeat is seen at least twice"},
		{[]string{"--max-velocity", "fast"}, "--max-velocity"},
		{[]string{"--max-velocity", "$0"}, "--max-velocity"},
		{[]string{"--breaker-config", bad}, "max_cost_usd is 0"},
	} {
		ran := filepath.Join(dir, "ran")
		args := append(append([]string{"record", "-o", filepath.Join(dir, "t.jbx")}, c.args...), "--", "touch", ran)
		_, errs := wantCode(t, ExitUsage, args...)
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: %q, want %q", c.args, errs, c.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%v: the agent ran", c.args)
		}
	}
}

// TestPricesFlag: --prices (or JUKEBOX_PRICES) prices calls by a table of
// the user's, for cost and ls alike; a file that is not a price table is
// exit 2. The price table is the process's: each run is a process of its
// own here, so that no other test sees it.
func TestPricesFlag(t *testing.T) {
	t.Parallel()
	dir := sampleTapes(t)
	tape := filepath.Join(dir, "agent-run.jbx")
	table := filepath.Join(t.TempDir(), "prices.json")
	must(t, os.WriteFile(table, []byte(`{"gpt-4o-mini": {"input_cost_per_token": 0.001, "output_cost_per_token": 0.001, "litellm_provider": "openai"}}`), 0o644))
	jukebox := func(env []string, args ...string) (string, int) {
		cmd := jukeboxCmd(t.Context(), dir, args...)
		cmd.Env = append(cmd.Env, env...)
		var errs strings.Builder
		cmd.Stderr = &errs
		out, _ := cmd.Output()
		return string(out) + errs.String(), cmd.ProcessState.ExitCode()
	}
	total := func(out string) float64 {
		var bill struct {
			Total struct {
				Cost float64 `json:"cost_usd"`
			} `json:"total"`
		}
		must(t, json.Unmarshal([]byte(out), &bill))
		return bill.Total.Cost
	}
	before, _ := jukebox(nil, "cost", "--json", tape)
	after, code := jukebox(nil, "--prices", table, "cost", "--json", tape)
	if code != 0 || total(after) != 1.98 || total(before) >= total(after) {
		t.Errorf("--prices: the bill was $%v and is $%v (exit %d), want $1.98 (1,980 tokens at $0.001)", total(before), total(after), code)
	}
	out, _ := jukebox([]string{"JUKEBOX_PRICES=" + table}, "ls", "--json", ".")
	if !strings.Contains(out, `"cost_usd": 1.98`) {
		t.Errorf("ls with JUKEBOX_PRICES:\n%s", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	must(t, os.WriteFile(bad, []byte(`[1, 2]`), 0o644))
	if out, code := jukebox(nil, "--prices", bad, "cost", tape); code != ExitUsage || !strings.Contains(out, bad) {
		t.Errorf("a bad table: exit %d: %s", code, out)
	}
}

// TestBreakerCheck: jukebox breaker says whether a recorded run would
// have tripped under given limits: exit 7 with where and why, or exit 0;
// no limit at all is exit 2.
func TestBreakerCheck(t *testing.T) {
	dir := sampleTapes(t)
	tape := filepath.Join(dir, "agent-run.jbx")
	out, _ := wantCode(t, ExitOK, "breaker", "--max-cost", "1", tape)
	if !strings.Contains(out, "would not trip") {
		t.Errorf("a cap the run stays within: %s", out)
	}
	out, _ = wantCode(t, ExitTripped, "breaker", "--json", "--max-cost", "0.0001", tape)
	checkShape(t, jsonDoc(t), "breaker", out, map[string]map[string]bool{})
	var res struct {
		Tripped bool `json:"tripped"`
		Breaker struct {
			Rule string `json:"rule"`
		} `json:"breaker"`
	}
	must(t, json.Unmarshal([]byte(out), &res))
	if !res.Tripped || res.Breaker.Rule != "cost" {
		t.Errorf("a cap the run passes: %s", out)
	}
	if _, errs := wantCode(t, ExitUsage, "breaker", tape); !strings.Contains(errs, "no limit to check") {
		t.Errorf("no limit: %s", errs)
	}
	// Tracks: the sample run is named "sample-agent"; a track of that name
	// holds it, a track of another name does not.
	cfg := filepath.Join(dir, "tracks.json")
	must(t, os.WriteFile(cfg, []byte(`{"tracks": {"sample-agent": {"max_cost_usd": 0.0001}, "nightly": {"max_cost_usd": 100}}}`), 0o644))
	if out, _ := wantCode(t, ExitTripped, "breaker", "--breaker-config", cfg, tape); !strings.Contains(out, "cost") {
		t.Errorf("the run's track trips it: %s", out)
	}
	must(t, os.WriteFile(cfg, []byte(`{"max_repeat": 50, "tracks": {"sample-agent": {"max_repeat": 40}, "nightly": {"max_cost_usd": 0.0001}}}`), 0o644))
	wantCode(t, ExitOK, "breaker", "--breaker-config", cfg, tape)
	must(t, os.WriteFile(cfg, []byte(`{"tracks": {"nightly": {"max_cost_usd": 0.0001}}}`), 0o644))
	if _, errs := wantCode(t, ExitUsage, "breaker", "--breaker-config", cfg, tape); !strings.Contains(errs, `no limit to check for run "sample-agent"`) {
		t.Errorf("another run's track alone: %s", errs)
	}
}
