package breaker

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestProgressLogsDoNotTrip: answers that say the same thing with numbers
// that advance ("Migrated table 2/4/6 of 40") are progress at the
// documented threshold of 3; the same answer with the same numbers again
// is a loop.
func TestProgressLogsDoNotTrip(t *testing.T) {
	var progress, stuck []step
	for i := range 10 {
		progress = append(progress, step{text: fmt.Sprintf("Migrated table %d of 40 to the new schema; moving on to the next table now.", 2*(i+1))})
		stuck = append(stuck, step{text: "Migrated table 2 of 40 to the new schema; moving on to the next table now."})
	}
	l := Limits{MaxSemanticRepeat: 3}
	if at, trip := run(l, progress); trip != nil {
		t.Errorf("a progress log tripped at step %d: %+v", at, trip)
	}
	if at, trip := run(l, stuck); trip == nil || trip.Rule != RuleSemanticRepeat || at != 2 {
		t.Errorf("the same line with the same numbers: tripped at %d: %+v, want semantic-repeat at step 2", at, trip)
	}
	counted := []step{{text: "Checked 100 files: 3 failing tests remain in the parser package, fixing them next."},
		{text: "Checked 140 files: 2 failing tests remain in the parser package, fixing them next."},
		{text: "Checked 180 files: 1 failing tests remain in the parser package, fixing them next."}}
	if at, trip := run(l, counted); trip != nil {
		t.Errorf("counters moving on tripped at %d: %+v", at, trip)
	}
}

// TestPollingIsProgress: a status poll between waits (status, sleep,
// status, sleep, ...) whose status moves on does not trip the oscillation
// rule; a poll that stays where it was is a loop.
func TestPollingIsProgress(t *testing.T) {
	poll := func(statuses func(int) string) []step {
		var steps []step
		for i := range 12 {
			c := ToolUse{ID: fmt.Sprint("p", i), Name: "job_status", Args: `{"job": 17}`}
			result := statuses(i / 2)
			if i%2 == 1 {
				c, result = ToolUse{ID: fmt.Sprint("p", i), Name: "sleep", Args: `{"seconds": 5}`}, "slept 5s"
			}
			steps = append(steps, step{calls: []ToolUse{c}, results: []string{result}})
		}
		return steps
	}
	l := Limits{MaxRepeat: 3}
	if at, trip := run(l, poll(func(i int) string { return fmt.Sprintf("running, %d%% done", 10*(i+1)) })); trip != nil {
		t.Errorf("a poll that moves on tripped at %d: %+v", at, trip)
	}
	at, trip := run(l, poll(func(int) string { return "running, 40% done" }))
	if trip == nil || at > 6 {
		t.Errorf("a poll stuck at 40%%: tripped at %d: %+v", at, trip)
	}
}

// TestRealLoopsTrip: loops with no progress trip whatever shape they
// take: an undo/redo of a file, a read-and-write flip whose reads come
// back to what they were, a retry of the same failing command, the same
// answer with the same numbers.
func TestRealLoopsTrip(t *testing.T) {
	write := func(i int, v string) ToolUse {
		return ToolUse{ID: fmt.Sprint("w", i), Name: "write_file", Args: fmt.Sprintf(`{"path":"a.txt","content":%q}`, v)}
	}
	var undo, flip, retry []step
	for i := range 16 {
		undo = append(undo, step{calls: []ToolUse{write(i, []string{"v1", "v2"}[i%2])}, results: []string{"wrote 2 bytes"}})
		c, r := read(fmt.Sprint("r", i), "a.txt"), []string{"v1", "v2"}[(i/2)%2]
		if i%2 == 1 {
			c, r = write(i, []string{"v2", "v1"}[(i/2)%2]), "ok"
		}
		flip = append(flip, step{calls: []ToolUse{c}, results: []string{r}})
		retry = append(retry, step{calls: []ToolUse{{ID: fmt.Sprint("t", i), Name: "run_shell", Args: `{"command":"go test ./..."}`}},
			results: []string{"FAIL: 3 tests failed"}})
	}
	for name, c := range map[string]struct {
		steps  []step
		within int
	}{"undo and redo": {undo, 6}, "read and write back": {flip, 13}, "retry": {retry, 3}} {
		// The flip is a loop of four actions: each is seen the third
		// time in its third round after the first.
		if at, trip := run(Limits{MaxRepeat: 3}, c.steps); trip == nil || (trip.Rule != RuleRepeat && trip.Rule != RuleOscillation) || at > c.within {
			t.Errorf("%s: tripped at %d: %+v, want a loop rule by step %d", name, at, trip, c.within)
		}
	}
}

// TestCostCapWorstCase: a call that bounds its output is held to the most
// it can cost, calls in flight included, so none passes the cap; without
// a bound the check uses the run's longest answer and the reasons name
// max_tokens as the way to make the cap exact.
func TestCostCapWorstCase(t *testing.T) {
	// demo-large: $3 in, $15 out per million tokens; 1000 in and at most
	// 1000 out is $0.018 at most.
	b := New(Limits{MaxCost: 0.03}, prices.Cost)
	if trip := b.Before(Call{Seq: 1, Model: "demo-large", InputTokens: 1000, MaxOutput: 1000}); trip != nil {
		t.Fatalf("the first call fits: %+v", trip)
	}
	trip := b.Before(Call{Seq: 3, Model: "demo-large", InputTokens: 1000, MaxOutput: 1000})
	if trip == nil || trip.Rule != RuleCost || !strings.Contains(trip.Reason, "could cost up to $0.0180") || !strings.Contains(trip.Reason, "in flight") {
		t.Fatalf("a second call in flight could pass the cap: %+v", trip)
	}

	// No bound: the longest answer so far stands in, and a longer one
	// passes the cap, with a reason that says so and names max_tokens.
	b = New(Limits{MaxCost: 0.03}, prices.Cost)
	b.Before(Call{Seq: 1, Model: "demo-large", InputTokens: 100})
	b.After(Answer{Seq: 2, Request: 1, Model: "demo-large", Usage: tapefmt.Usage{Input: 100, Output: 500}, At: t0})
	b.Before(Call{Seq: 3, Model: "demo-large", InputTokens: 100})
	trip = b.After(Answer{Seq: 4, Request: 3, Model: "demo-large", Usage: tapefmt.Usage{Input: 100, Output: 3000}, At: t0})
	if trip == nil || !strings.Contains(trip.Reason, "set no max_tokens") || !strings.Contains(trip.Reason, "3000 tokens") {
		t.Fatalf("an unbounded answer past the cap: %+v", trip)
	}
	b = New(Limits{MaxCost: 0.01}, prices.Cost)
	b.After(Answer{Seq: 2, Request: 1, Model: "demo-large", Usage: tapefmt.Usage{Input: 100, Output: 500}, At: t0})
	trip = b.Before(Call{Seq: 3, Model: "demo-large", InputTokens: 1000})
	if trip == nil || !strings.Contains(trip.Reason, "sets no max_tokens") || !strings.Contains(trip.Reason, "would cost about") {
		t.Fatalf("an unbounded call refused: %+v", trip)
	}

	// A bounded call that still passed (its input was larger than
	// counted) is not blamed on its answer's length.
	b = New(Limits{MaxCost: 0.01}, prices.Cost)
	b.Before(Call{Seq: 1, Model: "demo-large", InputTokens: 100, MaxOutput: 10})
	trip = b.After(Answer{Seq: 2, Request: 1, MaxOutput: 10, Model: "demo-large", Usage: tapefmt.Usage{Input: 5000, Output: 10}, At: t0})
	if trip == nil || !strings.Contains(trip.Reason, "input was larger than counted") || strings.Contains(trip.Reason, "answer") {
		t.Fatalf("a bounded call whose input was larger than counted: %+v", trip)
	}
}

// TestSmallAmountsDiffer: caps under a cent print with the digits that
// tell the cost from the cap.
func TestSmallAmountsDiffer(t *testing.T) {
	b := New(Limits{MaxCost: 0.00002}, prices.Cost)
	b.After(Answer{Seq: 2, Model: "demo-small", Usage: tapefmt.Usage{Input: 10, Output: 10}, At: t0})
	trip := b.Before(Call{Seq: 3, Model: "demo-small", InputTokens: 20, MaxOutput: 20})
	if trip == nil || strings.Contains(trip.Reason, "$0.0000 ") || !strings.Contains(trip.Reason, "$0.000015") || !strings.Contains(trip.Reason, "$0.000020") {
		t.Fatalf("small amounts: %+v", trip)
	}
	for _, c := range [][2]float64{{0.0000501, 0.00005}, {1.00001, 1}, {0.5, 0.25}} {
		if a, b := USDPair(c[0], c[1]); a == b {
			t.Errorf("USDPair(%v, %v) = %s, %s", c[0], c[1], a, b)
		}
	}
	if got := USD(0.1234); got != "$0.1234" {
		t.Errorf("USD(0.1234) = %s", got)
	}
	// Past 12 decimals: a cap of $1e-300 printed as $0.000000000000,
	// a limit above 0 shown as 0.
	if a, b := USDPair(3e-6, 1e-300); b == "$0.000000000000" || a == b || USD(1e-300) != "$1e-300" {
		t.Errorf("USDPair(3e-6, 1e-300) = %s, %s; USD(1e-300) = %s", a, b, USD(1e-300))
	}
	if a, b := USDPair(1.5e-20, 1.2e-20); a == b || a != "$1.5e-20" {
		t.Errorf("USDPair(1.5e-20, 1.2e-20) = %s, %s", a, b)
	}
}

// TestLimitsAreFinite: NaN, infinities, zero and negatives are not
// limits, in a velocity as in the config file.
func TestLimitsAreFinite(t *testing.T) {
	for _, bad := range []string{"NaN", "Inf", "+Inf", "$NaN", "$Inf", "-Inf", "0", "$-1"} {
		if _, _, err := ParseVelocity(bad); err == nil {
			t.Errorf("ParseVelocity(%q): no error", bad)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, -1} {
		if Finite(v) {
			t.Errorf("Finite(%v)", v)
		}
	}
}

// TestAgentTripRefusesThatAgentOnly: an agent past its own limit has its
// calls refused while the others run on; with TripAll the whole run stops.
func TestAgentTripRefusesThatAgentOnly(t *testing.T) {
	for _, all := range []bool{false, true} {
		s := NewSet(Limits{MaxCost: 1, TripAll: all, Agents: map[string]Limits{"coder": {MaxCost: 0.006}}}, prices.Cost)
		call := func(agent string, seq uint64) *Trip {
			if t := s.Before(agent, Call{Seq: seq, Model: "demo-large", InputTokens: 1000, MaxOutput: 100}); t != nil {
				return t
			}
			return s.After(agent, Answer{Seq: seq + 1, Request: seq, Model: "demo-large", Usage: tapefmt.Usage{Input: 1000, Output: 100}, At: t0})
		}
		call("coder", 1)
		trip := call("coder", 3)
		if trip == nil || trip.Agent != "coder" || !strings.HasPrefix(trip.Reason, "agent coder: its calls have cost $0.0045") || s.Stops(trip) != all {
			t.Fatalf("trip all %v: coder past its own cap: %+v", all, trip)
		}
		if got := call("planner", 5); (got != nil) != all {
			t.Errorf("trip all %v: planner's call after coder's trip: %+v", all, got)
		}
		if call("coder", 7) != trip || s.Tripped() != trip {
			t.Errorf("trip all %v: coder's later call is not refused", all)
		}
	}
}
