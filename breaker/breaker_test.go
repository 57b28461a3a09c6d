package breaker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// run feeds a breaker a scripted run: each step is an answer calling the
// given tools, then a request carrying their results. It returns the step
// at which it tripped (-1: never) and the trip.
type step struct {
	text    string
	calls   []ToolUse
	results []string
	usage   tapefmt.Usage
}

func run(l Limits, steps []step) (int, *Trip) {
	b := New(l, prices.Cost)
	seq := uint64(0)
	var pendingIDs []string
	var pendingResults []string
	for i, s := range steps {
		var results []ToolResult
		for j, id := range pendingIDs {
			results = append(results, ToolResult{ID: id, Content: pendingResults[j]})
		}
		seq++
		if t := b.Before(Call{Seq: seq, Model: "demo-large", InputTokens: 100, Results: results}); t != nil {
			return i, t
		}
		seq++
		if t := b.After(Answer{Seq: seq, Request: seq - 1, Model: "demo-large", Usage: s.usage, Text: s.text, ToolCalls: s.calls, At: t0.Add(time.Duration(i) * time.Second)}); t != nil {
			return i, t
		}
		pendingIDs, pendingResults = nil, s.results
		for _, c := range s.calls {
			pendingIDs = append(pendingIDs, c.ID)
		}
	}
	return -1, nil
}

// realistic are answers of a run that makes progress.
var realistic = []string{
	"Let me start by listing the files in the repository to understand its layout.",
	"The repository has a cmd folder and a pkg folder; I will read the main package first.",
	"main.go parses flags and calls run, which opens the database; the bug is likely there.",
	"I found that the connection string is read before the environment is loaded, which explains the error.",
	"I will move the call to loadEnv above the flag parsing and add a test for the empty variable.",
	"The test fails as expected before the change; now I apply the fix to main.go.",
	"With the fix in place the new test passes, and so do the other forty tests of the package.",
	"Next I check the README, which documents the variable, and update its example.",
	"The linter reports one unused import in db.go; I remove it and run the linter again.",
	"Everything passes: the fix, the new test, the README and the lint. Summary follows.",
}

func read(id, path string) ToolUse {
	return ToolUse{ID: id, Name: "read_file", Args: fmt.Sprintf(`{"path": %q}`, path)}
}

// TestRepeatTrips: the same tool call with the same result trips the
// MaxRepeat-th time, on the request that carries that result.
func TestRepeatTrips(t *testing.T) {
	var steps []step
	for i := range 6 {
		steps = append(steps, step{calls: []ToolUse{read(fmt.Sprint("c", i), "notes.txt")}, results: []string{"same text"}})
	}
	at, trip := run(Limits{MaxRepeat: 3}, steps)
	if trip == nil || trip.Rule != RuleRepeat || at != 3 {
		t.Fatalf("tripped at step %d: %+v, want repeat at step 3", at, trip)
	}
	if len(trip.Evidence) != 6 || !strings.Contains(trip.Reason, "read_file") {
		t.Errorf("evidence %v, reason %q", trip.Evidence, trip.Reason)
	}
	// Keys in another order and other spacing are the same arguments.
	steps[1].calls[0].Args = `{ "path":"notes.txt" }`
	if at, _ := run(Limits{MaxRepeat: 3}, steps); at != 3 {
		t.Errorf("reordered arguments: tripped at %d", at)
	}
}

// TestProgressDoesNotTrip: the same call with a new result each time (a
// file that grows, a poll that moves on) is progress, not a loop; nor
// does a realistic run of different calls trip.
func TestProgressDoesNotTrip(t *testing.T) {
	var polls, varied []step
	for i := range 10 {
		polls = append(polls, step{calls: []ToolUse{read(fmt.Sprint("c", i), "log.txt")}, results: []string{fmt.Sprint("line ", i)}})
		varied = append(varied, step{text: realistic[i],
			calls: []ToolUse{read(fmt.Sprint("v", i), fmt.Sprintf("src/file%d.go", i))}, results: []string{fmt.Sprint("package p // ", i)}})
	}
	l := Limits{MaxRepeat: 3, MaxSemanticRepeat: 3, MaxCost: 5}
	if at, trip := run(l, polls); trip != nil {
		t.Errorf("a poll that moves on tripped at %d: %+v", at, trip)
	}
	if at, trip := run(l, varied); trip != nil {
		t.Errorf("a run of different calls tripped at %d: %+v", at, trip)
	}
}

// TestOscillationTrips: two calls alternating (A,B,A,B,...) trip after
// MaxRepeat cycles when their results come back to what they were (an
// agent undoing and redoing), even if no action is seen MaxRepeat times.
func TestOscillationTrips(t *testing.T) {
	var steps []step
	for i := range 10 {
		c := ToolUse{ID: fmt.Sprint("c", i), Name: "write_file", Args: `{"path":"a.txt","content":"v1"}`}
		if i%2 == 1 {
			c.Args = `{"path":"a.txt","content":"v2"}`
		}
		steps = append(steps, step{calls: []ToolUse{c}, results: []string{[]string{"created", "created", "replaced", "replaced"}[i%4]}})
	}
	at, trip := run(Limits{MaxRepeat: 3}, steps)
	if trip == nil || trip.Rule != RuleOscillation || at != 6 || len(trip.Evidence) != 6 {
		t.Fatalf("tripped at step %d: %+v, want oscillation at step 6 with 6 frames", at, trip)
	}
}

// TestSemanticRepeatTrips: an answer said again in other words, and code
// written again with other names, trip at MaxSemanticRepeat.
func TestSemanticRepeatTrips(t *testing.T) {
	say := []string{
		"I could not find the configuration file, so I will search the repository for it again now.",
		"I could not find the configuration file, so I will search the whole repository for it again now.",
		"I could not find the configuration file so I'll search the repository for it again now!",
	}
	var steps []step
	for _, s := range say {
		steps = append(steps, step{text: s})
	}
	at, trip := run(Limits{MaxSemanticRepeat: 3}, steps)
	if trip == nil || trip.Rule != RuleSemanticRepeat || at != 2 {
		t.Fatalf("paraphrases: tripped at %d: %+v", at, trip)
	}
	code := []string{
		"Here is the fix:\n```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```",
		"Trying again:\n```go\nfunc sum(x, y int) int { return x + y }\n```",
		"One more time:\n```go\nfunc plus(left, right int) int {\n    return left +\n        right\n}\n```",
	}
	steps = nil
	for _, s := range code {
		steps = append(steps, step{text: s})
	}
	if at, trip := run(Limits{MaxSemanticRepeat: 3}, steps); trip == nil || at != 2 || !strings.Contains(trip.Reason, "same code") {
		t.Fatalf("Go code equal but for names: tripped at %d: %+v", at, trip)
	}
	steps[2].text = "Now:\n```go\nfunc plus(a, b int) int { return a - b }\n```"
	if at, trip := run(Limits{MaxSemanticRepeat: 3}, steps); trip != nil {
		t.Errorf("different Go code tripped at %d: %+v", at, trip)
	}
	py := []string{"```python\ndef f(x):\n    return x * 2  # double\n```", "```python\ndef g(y):\n  return y * 2\n```"}
	if normalizeCode("python", py[0][10:len(py[0])-3]) != normalizeCode("python", py[1][10:len(py[1])-3]) {
		t.Error("Python equal but for names and a comment normalises differently")
	}
	if normalizeCode("python", "if x:\n  y") == normalizeCode("python", "while x:\n  y") {
		t.Error("if and while normalise alike")
	}
}

// TestCostCapHoldsBeforeTheCall: the call that would pass the cap is
// refused before it goes out, not after.
func TestCostCapHoldsBeforeTheCall(t *testing.T) {
	b := New(Limits{MaxCost: 0.01}, prices.Cost)
	// demo-large: $3 in, $15 out per million tokens.
	for i := range 10 {
		seq := uint64(2*i + 1)
		if trip := b.Before(Call{Seq: seq, Model: "demo-large", InputTokens: 1000, MaxOutput: 100}); trip != nil {
			usd, _ := b.Spent()
			// Each call costs $0.0045: two fit, the third would pass $0.01.
			if i != 2 || trip.Rule != RuleCost || usd > 0.01 || trip.Evidence[0] != seq {
				t.Fatalf("tripped before call %d with $%.4f spent: %+v", i, usd, trip)
			}
			return
		}
		b.After(Answer{Seq: seq + 1, Request: seq, Model: "demo-large", Usage: tapefmt.Usage{Input: 1000, Output: 100}, At: t0})
	}
	t.Fatal("the cap never held")
}

// TestVelocityAndUnknownModels: tokens a minute trip; a model without a
// price trips a limit in dollars unless a rate stands in for it.
func TestVelocityAndUnknownModels(t *testing.T) {
	b := New(Limits{MaxTokensPerMin: 1000}, prices.Cost)
	for i := range 5 {
		trip := b.After(Answer{Seq: uint64(i), Model: "demo-small", Usage: tapefmt.Usage{Input: 300}, At: t0.Add(time.Duration(i) * 10 * time.Second)})
		if (trip != nil) != (i == 3) {
			t.Fatalf("answer %d: %+v", i, trip)
		}
		if trip != nil {
			break
		}
	}
	// Spread over more than a minute, the same tokens do not trip.
	b = New(Limits{MaxTokensPerMin: 1000}, prices.Cost)
	for i := range 5 {
		if trip := b.After(Answer{Model: "demo-small", Usage: tapefmt.Usage{Input: 300}, At: t0.Add(time.Duration(i) * 40 * time.Second)}); trip != nil {
			t.Fatalf("slow answers tripped at %d: %+v", i, trip)
		}
	}
	if trip := New(Limits{MaxCost: 1}, prices.Cost).Before(Call{Model: "my-local-model"}); trip == nil || trip.Rule != RuleUnknownModel {
		t.Errorf("an unknown model under a cost cap: %+v", trip)
	}
	if trip := New(Limits{MaxCost: 1, UnknownModelRate: 2}, prices.Cost).Before(Call{Model: "my-local-model", InputTokens: 10}); trip != nil {
		t.Errorf("an unknown model with a rate: %+v", trip)
	}
	if trip := New(Limits{MaxRepeat: 3}, prices.Cost).Before(Call{Model: "my-local-model"}); trip != nil {
		t.Errorf("an unknown model without a limit in dollars: %+v", trip)
	}
	// A call that names no model and carries no text (the openai SDK's
	// models.list) has nothing to price: it tripped the cap's
	// unknown-model rule. A call with text and no model still does.
	if trip := New(Limits{MaxCost: 1}, prices.Cost).Before(Call{}); trip != nil {
		t.Errorf("a call without a model or text under a cost cap: %+v", trip)
	}
	if trip := New(Limits{MaxCost: 1}, prices.Cost).Before(Call{InputTokens: 10}); trip == nil || trip.Rule != RuleUnknownModel {
		t.Errorf("a call with text and no model under a cost cap: %+v", trip)
	}
}

func TestLoadConfigAndVelocity(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, fmt.Sprint(len(s), ".json"))
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	l, err := LoadConfig(write(`{"max_cost_usd": 0.5, "max_repeat": 3, "max_semantic_repeat": 4, "max_tokens_per_min": 20000}`))
	if err != nil || l.MaxCost != 0.5 || l.MaxRepeat != 3 || l.MaxSemanticRepeat != 4 || l.MaxTokensPerMin != 20000 {
		t.Fatalf("%+v, %v", l, err)
	}
	// What follows the object was dropped without a word: a second
	// object's cost cap, trailing words.
	for _, bad := range []string{`{"max_cost_usd": 0}`, `{"max_cost_usd": -1}`, `{"max_repeat": 1}`, `{"max_cost": 1}`, `{`,
		`{"max_cost_usd": 0.5} junk`, "{\"max_repeat\": 5}\n{\"max_cost_usd\": 0.00001}",
		// An agent without a name held nothing (a call of no agent is not its).
		`{"agents": {"": {"max_cost_usd": 0.1}}}`, `{"tracks": {"t": {"agents": {" ": {"max_repeat": 3}}}}}`} {
		if _, err := LoadConfig(write(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for in, want := range map[string][2]float64{"20000": {20000, 0}, "$0.50": {0, 0.5}, "$2/min": {0, 2}, "500/min": {500, 0}} {
		tok, usd, err := ParseVelocity(in)
		if err != nil || tok != want[0] || usd != want[1] {
			t.Errorf("ParseVelocity(%q) = %v, %v, %v", in, tok, usd, err)
		}
	}
	for _, bad := range []string{"0", "$-1", "fast", ""} {
		if _, _, err := ParseVelocity(bad); err == nil {
			t.Errorf("ParseVelocity(%q): no error", bad)
		}
	}
}

// TestAgentLimits: an agent's own limit trips on its calls alone, and
// the trip names it; the run's limit counts every agent together.
func TestAgentLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agents.json")
	os.WriteFile(path, []byte(`{"max_cost_usd": 0.02, "agents": {"coder": {"max_cost_usd": 0.006}}}`), 0o644)
	l, err := LoadConfig(path)
	if err != nil || l.Agents["coder"].MaxCost != 0.006 {
		t.Fatalf("%+v, %v", l, err)
	}
	s := NewSet(l, prices.Cost)
	// demo-large, 1000 in and 100 out: $0.0045 a call.
	call := func(agent string, seq uint64) *Trip {
		if t := s.Before(agent, Call{Seq: seq, Model: "demo-large", InputTokens: 1000, MaxOutput: 100}); t != nil {
			return t
		}
		return s.After(agent, Answer{Seq: seq + 1, Request: seq, Model: "demo-large", Usage: tapefmt.Usage{Input: 1000, Output: 100}, At: t0})
	}
	if trip := call("planner", 1); trip != nil {
		t.Fatalf("planner's first call: %+v", trip)
	}
	if trip := call("coder", 3); trip != nil {
		t.Fatalf("coder's first call: %+v", trip)
	}
	trip := call("coder", 5)
	if trip == nil || trip.Rule != RuleCost || !strings.HasPrefix(trip.Reason, "agent coder: ") {
		t.Fatalf("coder's second call would take it past its own cap: %+v", trip)
	}
	if s.Tripped() != trip || call("coder", 7) != trip || call("planner", 9) != nil {
		t.Error("after coder's trip, coder's calls are refused and planner's go on (TestAgentTripRefusesThatAgentOnly)")
	}
	for _, bad := range []string{`{"agents": {"a": {"max_cost_usd": 0}}}`, `{"agents": {"a": {"agents": {}}}}`, `{"agents": {"a": {"unknown_model_rate": 1}}}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestTrackLimits: a track (a named run) has limits of its own, which
// replace the run-wide ones key by key for runs of that name; its agents
// join the run-wide agents. Any other run gets the run-wide limits.
func TestTrackLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tracks.json")
	os.WriteFile(path, []byte(`{"max_cost_usd": 1, "max_repeat": 3, "unknown_model_rate": 2,
		"agents": {"planner": {"max_cost_usd": 0.2}, "coder": {"max_repeat": 5}},
		"tracks": {"invoice-agent": {"max_cost_usd": 0.5, "agents": {"coder": {"max_cost_usd": 0.1}}}}}`), 0o644)
	l, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := l.Track("invoice-agent")
	if tr.MaxCost != 0.5 || tr.MaxRepeat != 3 || tr.UnknownModelRate != 2 || tr.Tracks != nil {
		t.Errorf("the track's cap over the run's, the rest kept: %+v", tr)
	}
	if tr.Agents["planner"].MaxCost != 0.2 || tr.Agents["coder"].MaxCost != 0.1 || tr.Agents["coder"].MaxRepeat != 0 || tr.Agents["coder"].UnknownModelRate != 2 {
		t.Errorf("agents: the track's replace the run's by name: %+v", tr.Agents)
	}
	if l.Agents["coder"].MaxRepeat != 5 {
		t.Error("Track changed the run-wide limits it was called on")
	}
	other := l.Track("nightly")
	if other.MaxCost != 1 || other.Tracks != nil || len(other.Agents) != 2 {
		t.Errorf("a run with no track of its own: %+v", other)
	}
	if (Limits{Tracks: map[string]Limits{"x": {MaxCost: 1}}}).Empty() {
		t.Error("a config with only a track is not empty")
	}
	for _, bad := range []string{`{"tracks": {"a": {"max_cost_usd": 0}}}`, `{"tracks": {"a": {"tracks": {}}}}`,
		`{"tracks": {"a": {"agents": {"b": {"tracks": {}}}}}}`, `{"tracks": {"a": {"agents": {"b": {"max_repeat": 1}}}}}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("%s: no error", bad)
		} else if !strings.Contains(err.Error(), `track "a"`) {
			t.Errorf("%s: the error does not name the track: %v", bad, err)
		}
	}
}

// TestReportedCost: a cost the agent reports (a turn's cost_usd) counts
// towards the cap as it is, and the trip says it was reported.
func TestReportedCost(t *testing.T) {
	b := New(Limits{MaxCost: 0.01}, prices.Cost)
	if trip := b.After(Answer{Seq: 1, Reported: 0.006, At: t0}); trip != nil {
		t.Fatalf("under the cap: %+v", trip)
	}
	trip := b.After(Answer{Seq: 2, Model: "gpt-4o", Reported: 0.006, At: t0})
	// The reason names the turn that took the cost past the cap: "with
	// $0.0200 the agent reported" read as the part of the cost reported.
	if trip == nil || trip.Rule != RuleCost || !strings.Contains(trip.Reason, "(taken past it by $0.0060 the agent reported for a turn)") || trip.Evidence[0] != 2 {
		t.Fatalf("past the cap: %+v", trip)
	}
}

// TestCapHoldsAtItsOwnAmount: amounts that sum to the cap exactly in
// decimal reach it, and only an amount past it trips. $0.20 and $0.10 are
// $0.30000000000000004 in binary floating point: a call that brought the
// run to its $0.30 cap was refused ("could cost up to $0.1000 more, past
// the cap of $0.3000"), and reported turns of $0.10 and $0.20 tripped with
// "$0.300000000000, past the cap of $0.300000000000".
func TestCapHoldsAtItsOwnAmount(t *testing.T) {
	rate := func(model string, u tapefmt.Usage) (float64, bool) { return float64(u.Output) * 0.1, true }
	b := New(Limits{MaxCost: 0.3}, rate)
	for i := range 3 {
		seq := uint64(2*i + 1)
		if trip := b.Before(Call{Seq: seq, Model: "m", InputTokens: 24, MaxOutput: 1}); trip != nil {
			t.Fatalf("call %d, within the cap, refused: %s", i, trip.Reason)
		}
		b.After(Answer{Seq: seq + 1, Request: seq, Model: "m", Usage: tapefmt.Usage{Input: 24, Output: 1}, At: t0})
	}
	if trip := b.Before(Call{Seq: 7, Model: "m", InputTokens: 24, MaxOutput: 1}); trip == nil || trip.Rule != RuleCost {
		t.Fatalf("a fourth call, past the cap, was let through: %+v", trip)
	}

	b = New(Limits{MaxCost: 0.3}, rate)
	for i, usd := range []float64{0.1, 0.2} {
		if trip := b.After(Answer{Seq: uint64(i + 1), Reported: usd, At: t0}); trip != nil {
			t.Fatalf("turns that reach the cap tripped: %s", trip.Reason)
		}
	}
	if trip := b.After(Answer{Seq: 3, Reported: 0.000001, At: t0}); trip == nil || trip.Rule != RuleCost {
		t.Fatalf("a millionth of a dollar past the cap did not trip: %+v", trip)
	}

	v := New(Limits{MaxCostPerMin: 0.3}, rate)
	for i, usd := range []float64{0.1, 0.2} {
		if trip := v.After(Answer{Seq: uint64(i + 1), Reported: usd, At: t0}); trip != nil {
			t.Fatalf("a minute's spend at its limit tripped: %s", trip.Reason)
		}
	}
}
