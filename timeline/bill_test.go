package timeline

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestBill: a run of two agents over two steps, billed by model (with the
// rate used), by agent (the X-Jukebox-Agent header) and by step; an
// unpriced model is counted as such, never as free; every grouping adds
// up to the same total, which is what ls says.
func TestBill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bill.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i, c := range []struct {
			agent, model string
			in, out      int64
			step         bool
		}{
			{"planner", "demo-large", 1000, 100, false},
			{"coder", "demo-small", 4000, 400, true},
			{"coder", "my-local-model", 500, 50, false},
		} {
			if c.step {
				if _, err := w.Commit(); err != nil {
					return err
				}
			}
			h := http.Header{}
			h.Set("X-Jukebox-Agent", c.agent)
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Header: h, Model: c.model})
			w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: c.model, Usage: tapefmt.Usage{Input: c.in, Output: c.out}})
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tp, sum := summarized(t, path)
	want := map[string]map[string]float64{
		ByModel: {"demo-large": 0.0045, "demo-small": 0.0015, "my-local-model": 0},
		ByAgent: {"planner": 0.0045, "coder": 0.0015},
		ByStep:  {"1": 0.0045, "2": 0.0015}, // numbered from 1, as the turntable numbers them
	}
	for by, costs := range want {
		b, err := MakeBill(tp, by)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Rows) != len(costs) || b.Total.Calls != 3 || !near(b.Total.Cost, sum.Cost) || b.Total.Unpriced != 1 {
			t.Errorf("by %s: %d rows, total %+v (ls says $%v)", by, len(b.Rows), b.Total, sum.Cost)
		}
		for _, r := range b.Rows {
			if !near(r.Cost, costs[r.Key]) {
				t.Errorf("by %s: %s costs $%v, want $%v", by, r.Key, r.Cost, costs[r.Key])
			}
			if by == ByModel && (r.Key == "my-local-model") != (r.Rate == nil) {
				t.Errorf("by model: %s rate %+v", r.Key, r.Rate)
			}
		}
	}
	if _, err := MakeBill(tp, "day"); err == nil {
		t.Error("a bill by day: no error")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestTripEvidence: the frames a breaker.trip names are marked in the
// timeline, and the trip's row lists them.
func TestTripEvidence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trip.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i := range 3 {
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions"})
			w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200})
		}
		w.Append(0, tapefmt.BreakerTrip{Rule: "repeat", Reason: "the same call 3 times", Evidence: []uint64{2, 4, 6}})
		_, err := w.Append(0, tapefmt.RunEnd{ExitCode: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for i := range tl.Len() {
		if got, want := tl.Row(i).Evidence, i == 2 || i == 4 || i == 6; got != want {
			t.Errorf("frame %d: evidence %v, want %v", i, got, want)
		}
	}
	if r := tl.Row(7); !r.Trip || r.Summary != "tripped repeat: the same call 3 times (frames 2, 4, 6)" {
		t.Errorf("trip row: %+v", r)
	}
}

// TestReportedCostBounded: two turns reporting $1.7e308 each summed to
// +Inf, which no JSON holds: ls --json of the whole folder failed (and
// push after its upload). A turn's cost over tapefmt.MaxTurnCost, which
// the control API refuses, counts for nothing on a tape that holds one.
func TestReportedCostBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inf.jbx")
	if err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		w.Append(0, tapefmt.AgentTurn{Turn: 1, CostUSD: 1.7e308})
		w.Append(0, tapefmt.AgentTurn{Turn: 2, CostUSD: 1.7e308})
		w.Append(0, tapefmt.AgentTurn{Turn: 3, CostUSD: 0.25})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	tp, sum := summarized(t, path)
	if sum.Reported != 0.25 || sum.Cost != 0.25 {
		t.Errorf("reported %v, cost %v; want 0.25 each", sum.Reported, sum.Cost)
	}
	if _, err := json.Marshal(sum); err != nil {
		t.Errorf("the summary does not encode: %v", err)
	}
	b, err := MakeBill(tp, ByModel)
	if err != nil || b.Total.Cost != 0.25 {
		t.Errorf("the bill: %+v, %v", b.Total, err)
	}
}

// summarized opens the tape at path (closed when the test ends) and
// summarizes it.
func summarized(t *testing.T, path string) (*tapefmt.Tape, Summary) {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	sum, err := Summarize(path, tp)
	if err != nil {
		t.Fatal(err)
	}
	return tp, sum
}

// TestBillOfAFork: a fork's bill is of its whole timeline, and says what
// of it the parent paid (the calls before the fork call) and what the
// fork spent, its live cost (LiveCost), as the turntable does frame by
// frame (FromParent); a tape that is no fork has no such part, and its
// live cost is its whole cost.
func TestBillOfAFork(t *testing.T) {
	for _, fork := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "fork.jbx")
		start := tapefmt.RunStart{Argv: []string{"agent"}}
		if fork {
			start.Mode, start.Parent = tapefmt.ModeFork, &tapefmt.ParentRef{Tape: "ab", Frame: 3, Call: 2}
		}
		tapetest.WriteCalls(t, path, start, "demo-large", "demo-large", "demo-small")
		tp, sum := summarized(t, path)
		b, err := MakeBill(tp, ByModel)
		if err != nil {
			t.Fatal(err)
		}
		live, err := LiveCost(tp)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		parent, isFork := tl.FromParent(tl.Len() - 1)
		first, _ := tl.FromParent(2) // the first answer
		tl.Close()
		if isFork != fork || fork && (!near(parent, 0.009) || !near(first, 0.0045)) || !fork && parent != 0 {
			t.Errorf("fork %v: the turntable's part from the parent: $%v at the end, $%v at the first answer (a fork: %v)", fork, parent, first, isFork)
		}
		switch {
		case fork && !near(live, b.Total.Cost-0.009), !fork && !near(live, b.Total.Cost):
			t.Errorf("fork %v: live cost $%v of a total of $%v", fork, live, b.Total.Cost)
		case !fork && b.Fork != nil:
			t.Errorf("a run that is no fork: %+v", b.Fork)
		case fork && (b.Fork == nil || b.Fork.Call != 2 || b.Fork.FromParent.Calls != 2 || !near(b.Fork.FromParent.Cost, 0.009) ||
			!near(b.Fork.Spent, b.Total.Cost-0.009) || b.Total.Calls != 3):
			t.Errorf("a fork from call 2: %+v, total %+v", b.Fork, b.Total)
		}
		// ls's summary says the same (it once showed a fork's whole
		// timeline's cost as the fork's).
		switch {
		case !fork && sum.Fork != nil:
			t.Errorf("the summary of a run that is no fork: %+v", sum.Fork)
		case fork && (sum.Fork == nil || sum.Fork.Call != 2 || !near(sum.Fork.Spent, b.Fork.Spent) || !near(sum.Cost, b.Total.Cost)):
			t.Errorf("the summary of a fork from call 2: %+v, cost $%v; the bill's %+v", sum.Fork, sum.Cost, b.Fork)
		}
	}
}
