package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// sixCalls is an agent making six calls of the model AGENT_MODEL, each
// asking for at most 50 tokens, as the agent AGENT_NAME (X-Jukebox-Agent)
// when set; it prints each call's status and goes on after a refusal.
const sixCalls = `
import json, os, urllib.request, urllib.error
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
for i in range(6):
    body = json.dumps({"model": os.environ["AGENT_MODEL"], "max_tokens": 50,
                       "messages": [{"role": "user", "content": "step %d" % i}]}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    if os.environ.get("AGENT_NAME"):
        headers["X-Jukebox-Agent"] = os.environ["AGENT_NAME"]
    req = urllib.request.Request(url, body, headers)
    try:
        with urllib.request.urlopen(req) as r:
            print(r.status, flush=True)
    except urllib.error.HTTPError as e:
        print(e.code, flush=True)
`

// TestRatesOnTheTape: the rates a run was recorded with
// (--unknown-model-rate, --prices) are on its tape, so cost and ls price
// it as the breaker did, without the flags; the calls the breaker refused
// are listed apart from the bill, not as calls without a price.
func TestRatesOnTheTape(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.py")
	must(t, os.WriteFile(agent, []byte(sixCalls), 0o644))
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("AGENT_MODEL", "my-local-model")
	out, stderr := wantCode(t, ExitTripped, "record", "--json", "--max-cost", "0.001", "--unknown-model-rate", "5",
		"--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "unknown.jbx", "--", py, agent)
	// The way on names the tape and the frame (it said TAPE and N).
	if !regexp.MustCompile(`continue with jukebox fork \S*unknown\.jbx --frame \d+ and a raised limit`).MatchString(stderr) {
		t.Errorf("record's trip does not say where to fork:\n%s", stderr)
	}
	var rec struct {
		Breaker struct{ Cost float64 } `json:"breaker"`
	}
	must(t, json.Unmarshal([]byte(out), &rec))
	if rec.Breaker.Cost <= 0 {
		t.Fatalf("record --json: %s", out)
	}
	out, _ = wantCode(t, ExitOK, "cost", "--json", "unknown.jbx")
	var bill struct {
		Rows []struct {
			Key      string  `json:"key"`
			Calls    int     `json:"calls"`
			Unpriced int     `json:"unpriced_calls"`
			Rate     *any    `json:"rate"`
			Cost     float64 `json:"cost_usd"`
		} `json:"rows"`
		Total struct {
			Cost float64 `json:"cost_usd"`
		} `json:"total"`
		Refused []struct {
			Key   string `json:"key"`
			Calls int    `json:"calls"`
		} `json:"refused"`
	}
	must(t, json.Unmarshal([]byte(out), &bill))
	if len(bill.Rows) != 1 || bill.Rows[0].Unpriced != 0 || bill.Rows[0].Rate == nil || math.Abs(bill.Total.Cost-rec.Breaker.Cost) > 1e-12 {
		t.Errorf("cost does not agree with the breaker's $%v:\n%s", rec.Breaker.Cost, out)
	}
	if len(bill.Refused) != 1 || bill.Refused[0].Calls < 1 || bill.Rows[0].Calls+bill.Refused[0].Calls != 6 {
		t.Errorf("refused calls are not apart from the bill:\n%s", out)
	}
	text, _ := wantCode(t, ExitOK, "cost", "unknown.jbx")
	if !strings.Contains(text, "refused by the circuit breaker, not sent and not billed: my-local-model") || strings.Contains(text, "no price") ||
		!strings.Contains(text, "CACHE WRITE") {
		t.Errorf("cost:\n%s", text)
	}
	// By step, each refused call's step is named as such (it read "2 1").
	text, _ = wantCode(t, ExitOK, "cost", "--by", "step", "unknown.jbx")
	if !regexp.MustCompile(`not sent and not billed: step \d+: \d+`).MatchString(text) {
		t.Errorf("cost --by step:\n%s", text)
	}
	out, _ = wantCode(t, ExitOK, "ls", "--json", "unknown.jbx")
	var ls []struct {
		Cost     float64  `json:"cost_usd"`
		Unpriced []string `json:"unpriced_models"`
	}
	must(t, json.Unmarshal([]byte(out), &ls))
	if len(ls) != 1 || len(ls[0].Unpriced) != 0 || math.Abs(ls[0].Cost-rec.Breaker.Cost) > 1e-12 {
		t.Errorf("ls does not agree with the breaker's $%v:\n%s", rec.Breaker.Cost, out)
	}

	// The turntable's running cost (timeline.Totals) says the same.
	tl, err := timeline.Open("unknown.jbx")
	must(t, err)
	defer tl.Close()
	if _, usd := tl.Totals(tl.Len() - 1); math.Abs(usd-rec.Breaker.Cost) > 1e-12 {
		t.Errorf("the turntable's total $%v, the breaker's $%v", usd, rec.Breaker.Cost)
	}

	// jukebox breaker prices the tape as the breaker did, without the
	// flag: the same cap trips on the same cost.
	out, _ = wantCode(t, ExitTripped, "breaker", "--json", "--max-cost", "0.001", "unknown.jbx")
	var check struct {
		Breaker struct {
			Rule string
			Cost float64
		} `json:"breaker"`
	}
	must(t, json.Unmarshal([]byte(out), &check))
	if check.Breaker.Rule != "cost" || math.Abs(check.Breaker.Cost-rec.Breaker.Cost) > 1e-12 {
		t.Errorf("jukebox breaker: %s, want the cost trip at $%v", out, rec.Breaker.Cost)
	}
	// Under a higher cap it would not trip on what the tape holds, which
	// stops where the run's own breaker stopped it: said so.
	out, _ = wantCode(t, ExitOK, "breaker", "--max-cost", "10", "unknown.jbx")
	if !strings.Contains(out, "would not trip") || !regexp.MustCompile(`its own breaker stopped the run at frame \d+ \(cost\)`).MatchString(out) {
		t.Errorf("jukebox breaker over a tape its breaker cut short:\n%s", out)
	}

	// A price file at record time prices the run for good: cost without
	// it says the same, and so does cost with another file.
	table := filepath.Join(dir, "prices.json")
	must(t, os.WriteFile(table, []byte(`{"my-local-model": {"input_cost_per_token": 0.001, "output_cost_per_token": 0.002, "litellm_provider": "openai"}}`), 0o644))
	cmd := jukeboxCmd(t.Context(), dir, "--prices", table, "record", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "file.jbx", "--", py, agent)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("record --prices: %v\n%s", err, b)
	}
	withFile, _ := jukeboxCmd(t.Context(), dir, "--prices", table, "cost", "--json", "file.jbx").Output()
	without, _ := jukeboxCmd(t.Context(), dir, "cost", "--json", "file.jbx").Output()
	must(t, json.Unmarshal(without, &bill))
	if string(withFile) != string(without) || bill.Total.Cost <= 0 || bill.Rows[0].Unpriced != 0 {
		t.Errorf("the run's rates are not its tape's:\nwith the file: %s\nwithout: %s", withFile, without)
	}
}

// TestAgentTripExitsAtTheEnd: an agent past its own limit has its calls
// refused, runs on to its own end, and record exits 7 then, saying why.
func TestAgentTripExitsAtTheEnd(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent, cfg := filepath.Join(dir, "agent.py"), filepath.Join(dir, "limits.json")
	must(t, os.WriteFile(agent, []byte(sixCalls), 0o644))
	must(t, os.WriteFile(cfg, []byte(`{"agents": {"coder": {"max_cost_usd": 0.0001}}}`), 0o644))
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("AGENT_MODEL", "demo-large")
	t.Setenv("AGENT_NAME", "coder")
	out, errs := wantCode(t, ExitTripped, "record", "--breaker-config", cfg, "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "coder.jbx", "--", py, agent)
	if strings.Count(out, "400") != 6 || !strings.Contains(errs, "circuit breaker tripped (cost): agent coder: its calls have cost $0.0000") ||
		!strings.Contains(errs, "ahead of the agent's exit 0") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
}

// TestCostOfCallsWithoutAModel: a call that names no model (the openai
// SDK's models.list) passes a cost cap (it tripped it as a model "" with
// no price, exit 7) and is billed as "(no model)", at nothing, not as a
// model "?" with "no price" (a rate missing where none is needed).
func TestCostOfCallsWithoutAModel(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.py")
	must(t, os.WriteFile(agent, []byte(`
import json, os, urllib.request
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
h = {"Content-Type": "application/json", "Authorization": "Bearer " + key}
with urllib.request.urlopen(urllib.request.Request(base + "/models", headers=h)) as r:
    print(len(json.load(r)["data"]) > 0)
body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}).encode()
with urllib.request.urlopen(urllib.request.Request(base + "/chat/completions", body, h)) as r:
    print(r.status)
`), 0o644))
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	wantCode(t, ExitOK, "record", "--max-cost", "1", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "run.jbx", "--", py, agent)
	text, _ := wantCode(t, ExitOK, "cost", "run.jbx")
	if !strings.Contains(text, "(no model)") || strings.Contains(text, "no price") || strings.Contains(text, "\n?") ||
		!strings.Contains(text, "(no model): 1 call that named none") {
		t.Errorf("cost:\n%s", text)
	}
}

// TestForkCostAgreesWithItsBreaker: the bill of a fork says what of it
// came from the parent's tape (the calls before the fork call, not paid
// again) and what the fork spent, and what it spent is what its circuit
// breaker counted when it tripped.
func TestForkCostAgreesWithItsBreaker(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(sixCalls), 0o644))
	t.Chdir(dir)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("AGENT_MODEL", "gpt-4o-mini")
	wantCode(t, ExitOK, "record", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "parent.jbx", "--", py, "agent.py")
	type bill struct {
		Total struct {
			Calls int     `json:"calls"`
			Cost  float64 `json:"cost_usd"`
		} `json:"total"`
		Fork *struct {
			Call       uint64 `json:"call"`
			FromParent struct {
				Calls int     `json:"calls"`
				Cost  float64 `json:"cost_usd"`
			} `json:"from_parent"`
			Spent float64 `json:"spent_usd"`
		} `json:"fork"`
	}
	var parent bill
	out, _ := wantCode(t, ExitOK, "cost", "--json", "parent.jbx")
	must(t, json.Unmarshal([]byte(out), &parent))
	if parent.Total.Calls != 6 || parent.Total.Cost <= 0 || parent.Fork != nil {
		t.Fatalf("the parent's bill:\n%s", out)
	}
	// The fork goes live at call #2, with a cap of three calls' cost:
	// the breaker trips after it has let one or two through.
	out, _ = wantCode(t, ExitOK, "show", "--json", "--kind", "llm.request", "parent.jbx")
	var frame uint64
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var f struct{ Seq uint64 }
		must(t, json.Unmarshal([]byte(line), &f))
		if i == 2 {
			frame = f.Seq
		}
	}
	out, _ = wantCode(t, ExitTripped, "fork", "parent.jbx", "--frame", strconv.FormatUint(frame, 10), "-o", "fork.jbx", "--json",
		"--max-cost", strconv.FormatFloat(parent.Total.Cost/2, 'g', -1, 64))
	var forked []struct {
		Breaker struct{ Cost float64 } `json:"breaker"`
	}
	must(t, json.Unmarshal([]byte(out), &forked))
	if len(forked) != 1 || forked[0].Breaker.Cost <= 0 {
		t.Fatalf("fork --json: %s", out)
	}
	spent := forked[0].Breaker.Cost
	var fork bill
	out, _ = wantCode(t, ExitOK, "cost", "--json", "fork.jbx")
	must(t, json.Unmarshal([]byte(out), &fork))
	if f := fork.Fork; f == nil || f.Call != 2 || f.FromParent.Calls != 2 || math.Abs(f.Spent-spent) > 1e-12 ||
		math.Abs(fork.Total.Cost-f.FromParent.Cost-f.Spent) > 1e-12 {
		t.Errorf("the fork's bill does not say what came from the parent, or what it spent ($%v, as its breaker counted):\n%s", spent, out)
	}
	text, _ := wantCode(t, ExitOK, "cost", "fork.jbx")
	if want := "a fork from call #2: the 2 calls before it were answered from the parent's tape"; !strings.Contains(text, want) ||
		!strings.Contains(text, "this run spent "+breaker.USD(spent)) {
		t.Errorf("cost of the fork:\n%s\nwant %q and this run spent %s", text, want, breaker.USD(spent))
	}
	// ls showed the fork's whole timeline's cost as the fork's, beside
	// its parent's row: it says what the fork spent too.
	type lsFork struct {
		Tape string  `json:"tape"`
		Cost float64 `json:"cost_usd"`
		Fork *struct {
			Call  uint64  `json:"call"`
			Spent float64 `json:"spent_usd"`
		} `json:"fork"`
	}
	var rows []lsFork
	out, _ = wantCode(t, ExitOK, "ls", "--json", "parent.jbx", "fork.jbx")
	must(t, json.Unmarshal([]byte(out), &rows))
	slices.SortFunc(rows, func(a, b lsFork) int { return strings.Compare(b.Tape, a.Tape) }) // parent, fork
	if len(rows) != 2 || rows[0].Fork != nil || rows[1].Fork == nil || rows[1].Fork.Call != 2 ||
		math.Abs(rows[1].Fork.Spent-spent) > 1e-12 || math.Abs(rows[1].Cost-fork.Total.Cost) > 1e-12 {
		t.Errorf("ls --json of the parent and the fork, want the fork's spent_usd %v:\n%s", spent, out)
	}
	text, _ = wantCode(t, ExitOK, "ls", "parent.jbx", "fork.jbx")
	if want := breaker.USD(fork.Total.Cost) + " (" + breaker.USD(spent) + " spent)"; !strings.Contains(text, want) || strings.Count(text, " spent)") != 1 {
		t.Errorf("ls of the parent and the fork, want %q on the fork's row alone:\n%s", want, text)
	}
}

// TestForkOfOneCallCost: cost of a fork from call #1 said "the 1 call
// before it were answered".
func TestForkOfOneCallCost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fork.jbx")
	tapetest.WriteCalls(t, path, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeFork, Parent: &tapefmt.ParentRef{Tape: "ab", Frame: 3, Call: 1}},
		"gpt-4o-mini", "gpt-4o-mini")
	out, _ := wantCode(t, ExitOK, "cost", path)
	if want := "a fork from call #1: the 1 call before it was answered from the parent's tape"; !strings.Contains(out, want) {
		t.Errorf("cost of a fork from call #1:\n%s\nwant %q", out, want)
	}
}
