package timeline

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Bill groupings.
const (
	ByModel = "model"
	ByAgent = "agent" // llmwire.AgentOf: the X-Jukebox-Agent header, else the latest agent turn
	ByStep  = "step"
)

// BillRow is one line of a run's bill: the calls of one model, agent or
// step, what they used and cost.
type BillRow struct {
	Key       string        `json:"key"`
	Calls     int           `json:"calls"`
	Usage     tapefmt.Usage `json:"tokens"`
	Cost      float64       `json:"cost_usd"`                  // of the priced calls
	Unpriced  int           `json:"unpriced_calls,omitempty"`  // calls that used tokens at no known price
	Estimated int           `json:"estimated_calls,omitempty"` // calls whose usage was counted, not reported (shown with "~")
	// Seconds is the time the calls took, each from its request to the
	// last byte of its answer, summed.
	Seconds float64      `json:"seconds"`
	Rate    *prices.Rate `json:"rate,omitempty"` // by model: the rate used, per million tokens
	// Reported is the part of Cost the agent reported itself (agent.turn
	// cost_usd: spending jukebox did not see).
	Reported float64 `json:"reported_usd,omitempty"`
}

// Bill is what a run cost, from its tape, priced call by call as every
// view prices it (llmwire.ResponseUsage). Calls the circuit breaker
// refused were never sent and cost nothing: they are counted in Refused,
// by the same key, not among the rows.
type Bill struct {
	By      string       `json:"by"`
	Rows    []BillRow    `json:"rows"`
	Total   BillRow      `json:"total"`
	Refused []RefusedRow `json:"refused,omitempty"`
	// Fork is, for a fork's tape, the part of the bill its parent paid:
	// the rows and the total are of the fork's whole timeline.
	Fork *ForkShare `json:"fork,omitempty"`
}

// ForkShare is what of a fork's bill came from its parent: the model
// calls before its fork call were answered from the parent's tape and
// cost nothing again. Spent is the rest, what the fork's own calls (and
// its turns' reported costs) cost: what its circuit breaker counted.
type ForkShare struct {
	Call       uint64  `json:"call"`        // the fork call (run.start's parent call), live from here on
	FromParent BillRow `json:"from_parent"` // the calls before it, answered from the parent's tape
	Spent      float64 `json:"spent_usd"`
}

// RefusedRow counts the calls of one model, agent or step that the
// circuit breaker refused.
type RefusedRow struct {
	Key   string `json:"key"`
	Calls int    `json:"calls"`
}

// MakeBill groups the tape's calls by ByModel, ByAgent or ByStep.
func MakeBill(t *tapefmt.Tape, by string) (Bill, error) {
	if by != ByModel && by != ByAgent && by != ByStep {
		return Bill{}, fmt.Errorf("bill by %q: by model, agent or step", by)
	}
	b := Bill{By: by, Total: BillRow{Key: "total"}}
	rows := map[string]*BillRow{}
	type req struct {
		frame *tapefmt.LLMRequest
		agent string
		step  int
	}
	reqs := map[uint64]req{}
	var memo llmwire.UsageMemo
	step, lastTurn := 0, ""
	for f, err := range t.Frames(tapefmt.KindRunStart, tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindStep, tapefmt.KindAgentTurn) {
		if err != nil {
			return b, err
		}
		p, err := f.Decode()
		if err != nil {
			return b, err
		}
		switch p := p.(type) {
		case *tapefmt.RunStart:
			if call, fork := p.ForkCall(); fork {
				b.Fork = &ForkShare{Call: call, FromParent: BillRow{Key: "from the parent"}}
			}
		case *tapefmt.Step:
			step++
		case *tapefmt.AgentTurn:
			lastTurn = cmp.Or(p.Agent, lastTurn)
			if p.Reported() > 0 {
				row := rowOf(by, rows, p.Model, lastTurn, step)
				row.Cost += p.Reported()
				row.Reported += p.Reported()
				b.Total.Cost += p.Reported()
				b.Total.Reported += p.Reported()
			}
		case *tapefmt.LLMRequest:
			reqs[p.Call] = req{frame: p, agent: llmwire.AgentOf(p.Header, lastTurn), step: step}
		case *tapefmt.LLMResponse:
			r := reqs[p.Call]
			c := memo.ResponseUsage(p, r.frame, t.Blob)
			if llmwire.Refused(p) {
				b.refused(keyOf(by, c.Model, r.agent, r.step))
				continue
			}
			row := rowOf(by, rows, c.Model, r.agent, r.step)
			if row.Rate == nil && by == ByModel && p.Rate != nil {
				rate := prices.PerMillion(*p.Rate) // the rate recorded with the call
				row.Rate = &rate
			}
			row.add(c, p.Elapsed)
			b.Total.add(c, p.Elapsed)
			if b.Fork != nil && p.Call < b.Fork.Call {
				b.Fork.FromParent.add(c, p.Elapsed)
			}
		}
	}
	if b.Fork != nil {
		b.Fork.Spent = b.Total.Cost - b.Fork.FromParent.Cost
	}
	for _, r := range rows {
		if r.Rate == nil && by == ByModel && r.Key != "?" {
			if rate, known := prices.RateOf(r.Key); known {
				r.Rate = &rate
			}
		}
		b.Rows = append(b.Rows, *r)
	}
	slices.SortFunc(b.Rows, func(x, y BillRow) int {
		if by == ByStep {
			var i, j int
			fmt.Sscan(x.Key, &i)
			fmt.Sscan(y.Key, &j)
			return cmp.Compare(i, j)
		}
		return cmp.Or(cmp.Compare(y.Cost, x.Cost), cmp.Compare(x.Key, y.Key))
	})
	return b, nil
}

// Bill is MakeBill of the timeline's tape.
func (tl *Timeline) Bill(by string) (Bill, error) { return MakeBill(tl.t, by) }

// keyOf is the key of a call of model, agent and step in a bill by by.
func keyOf(by, model, agent string, step int) string {
	switch by {
	case ByAgent:
		return cmp.Or(agent, "-")
	case ByStep:
		return fmt.Sprint(step + 1) // numbered from 1, as the turntable and bisect number steps
	}
	return cmp.Or(model, "?")
}

// rowOf is the row of a call (or a reported turn) of model, agent and
// step in a bill by by, made on first use.
func rowOf(by string, rows map[string]*BillRow, model, agent string, step int) *BillRow {
	key := keyOf(by, model, agent, step)
	row, ok := rows[key]
	if !ok {
		row = &BillRow{Key: key}
		rows[key] = row
	}
	return row
}

// refused counts a refused call under key.
func (b *Bill) refused(key string) {
	i := slices.IndexFunc(b.Refused, func(r RefusedRow) bool { return r.Key == key })
	if i < 0 {
		b.Refused, i = append(b.Refused, RefusedRow{Key: key}), len(b.Refused)
	}
	b.Refused[i].Calls++
}

func (r *BillRow) add(c llmwire.CallUsage, elapsed int64) {
	r.Calls++
	r.Seconds += float64(elapsed) / 1e9
	r.Usage = r.Usage.Plus(c.Usage)
	r.Cost += c.Cost
	if c.Unpriced() {
		r.Unpriced++
	}
	if c.Estimated {
		r.Estimated++
	}
}

// LiveCost is what the calls a fork made live cost: those from its fork
// call on (run.start's parent call), priced as MakeBill prices them; the
// calls before were answered from the parent and cost nothing again. For
// a tape that is no fork it is the whole run's cost of calls. Neither
// counts the costs the agent's turns reported.
func LiveCost(t *tapefmt.Tape) (float64, error) {
	b, err := MakeBill(t, ByModel)
	if err != nil {
		return 0, err
	}
	live := b.Total.Cost - b.Total.Reported
	if b.Fork != nil {
		live -= b.Fork.FromParent.Cost
	}
	return live, nil
}
