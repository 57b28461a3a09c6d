package timeline

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Summary is what `jukebox ls` and the turntable's header show of a run.
type Summary struct {
	Path string   `json:"path"`
	Name string   `json:"name,omitempty"`
	Argv []string `json:"argv,omitempty"`
	// Tags, User and Git are run.start's: the run's labels, who ran it
	// and where its folder's repository stood.
	Tags     map[string]string `json:"tags,omitempty"`
	User     string            `json:"user,omitempty"`
	Host     string            `json:"host,omitempty"`
	Git      *tapefmt.GitRef   `json:"git,omitempty"`
	Started  time.Time         `json:"started"`
	Duration time.Duration     `json:"duration_ns"`
	Frames   int               `json:"frames"`
	Steps    int               `json:"steps"`
	Calls    int               `json:"llm_calls"`
	Usage    tapefmt.Usage     `json:"tokens"`
	Cost     float64           `json:"cost_usd"`                  // of the priced calls (llmwire.ResponseUsage) and the turns' reported costs
	Unpriced []string          `json:"unpriced_models,omitempty"` // models without a known rate; "?" for calls that name none
	// Estimated counts the calls whose answer reported no usage: their
	// tokens were counted from their text (llmwire.CallUsage.Estimated),
	// and the run's tokens and cost are shown with a "~".
	Estimated int                `json:"estimated_calls,omitempty"`
	Exit      *tapefmt.RunEnd    `json:"exit,omitempty"` // nil while a run has no end frame
	Parent    *tapefmt.ParentRef `json:"parent,omitempty"`
	Recovered *tapefmt.Recovery  `json:"recovered,omitempty"`
	Sealed    bool               `json:"sealed"`
	// Breaker is the circuit breaker's trip, when it stopped the run.
	Breaker *tapefmt.BreakerTrip `json:"breaker,omitempty"`
	// Models are the calls' tokens by model ("" for calls that name
	// none), and Reported the turns' reported costs: what Cost and
	// Unpriced are worked out from (Price), with the prices of now.
	Models   []ModelTokens `json:"-"`
	Reported float64       `json:"-"`
	// Fork is, for a fork's tape, what of its cost it spent itself (Cost
	// is its whole timeline's, as the turntable shows it).
	Fork *SummaryFork `json:"fork,omitempty"`
}

// SummaryFork is what of a fork's summary it spent itself: the calls
// before its fork call were answered from the parent's tape and cost
// nothing again (Bill.Fork has the same of the bill).
type SummaryFork struct {
	Call uint64 `json:"call"` // the fork call, live from here on
	// Models are the tokens of its own calls (from the fork call on), by
	// model, with the rates they were made at.
	Models []ModelTokens `json:"-"`
	// Spent is what those calls cost, and the turns' reported costs:
	// what its circuit breaker counted.
	Spent float64 `json:"spent_usd"`
}

// SetCost sets the cost and unpriced models of s, and a fork's spending,
// from its tokens by model (Price).
func (s *Summary) SetCost() {
	s.Cost, s.Unpriced = Price(s.Models, s.Reported)
	if s.Fork != nil {
		s.Fork.Spent, _ = Price(s.Fork.Models, s.Reported)
	}
}

// ModelTokens are the calls of one model and the tokens they used.
type ModelTokens struct {
	Model string        `json:"model,omitempty"`
	Calls int           `json:"calls"`
	Usage tapefmt.Usage `json:"tokens"`
	// Rate is the rate the calls were recorded at (llm.response rate),
	// which Price uses; nil for calls recorded without one.
	Rate *tapefmt.Rate `json:"rate,omitempty"`
}

// Price works out a run's cost from its tokens by model at the rates they
// were recorded at, else with the prices of now (prices.Cost), plus the
// costs its agent reported: what ls shows of a tape here and of one in a
// store alike. unpriced are the models without a known rate ("?" for
// calls that name none), sorted.
func Price(models []ModelTokens, reported float64) (cost float64, unpriced []string) {
	cost = reported
	for _, m := range models {
		usd, ok := prices.Cost(m.Model, m.Usage)
		if m.Rate != nil {
			usd, ok = m.Rate.Cost(m.Usage), true
		}
		if !ok && m.Usage.Total() > 0 {
			unpriced = append(unpriced, cmp.Or(m.Model, "?"))
		}
		cost += usd
	}
	slices.Sort(unpriced)
	return cost, slices.Compact(unpriced)
}

// Summarize reads the run's start and end frames and every LLM call, whose
// tokens and cost it finds by llmwire.ResponseUsage.
func Summarize(path string, t *tapefmt.Tape) (Summary, error) {
	return summarize(path, t, nil)
}

// SummarizeCalls is Summarize and CallRecords in one reading of the tape.
func SummarizeCalls(path string, t *tapefmt.Tape) (Summary, []CallRecord, error) {
	var calls callReader
	s, err := summarize(path, t, &calls)
	return s, calls.out, err
}

// summarize is Summarize; with calls, it also reads each call's record.
func summarize(path string, t *tapefmt.Tape, calls *callReader) (Summary, error) {
	steps, err := StepsOf(t)
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Path: path, Started: t.Created(), Frames: t.Len(), Steps: steps,
		Recovered: t.Recovered(), Sealed: t.Sealed()}
	reqs := map[uint64]*tapefmt.LLMRequest{} // by call
	var memo llmwire.UsageMemo
	kinds := []tapefmt.Kind{tapefmt.KindRunStart, tapefmt.KindRunEnd, tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindBreakerTrip, tapefmt.KindAgentTurn}
	if calls != nil {
		kinds = append(kinds, tapefmt.KindStep)
	}
	for f, err := range t.Frames(kinds...) {
		if err != nil {
			return s, err
		}
		p, err := f.Decode()
		if err != nil {
			return s, err
		}
		s.Duration = max(s.Duration, f.Time)
		switch p := p.(type) {
		case *tapefmt.RunStart:
			s.Name, s.Argv, s.Parent = p.Name, p.Argv, p.Parent
			s.Tags, s.User, s.Host, s.Git = p.Tags, p.User, p.Host, p.Git
			if call, fork := p.ForkCall(); fork {
				s.Fork = &SummaryFork{Call: call}
			}
		case *tapefmt.RunEnd:
			s.Exit = p
		case *tapefmt.LLMRequest:
			reqs[p.Call] = p
		case *tapefmt.LLMResponse:
			if llmwire.Refused(p) {
				continue // never sent: not a call the run made
			}
			u := memo.ResponseUsage(p, reqs[p.Call], t.Blob)
			s.Models = addModel(s.Models, u, p.Rate)
			s.Calls++
			s.Usage = s.Usage.Plus(u.Usage)
			if u.Estimated {
				s.Estimated++
			}
			if s.Fork != nil && p.Call >= s.Fork.Call {
				s.Fork.Models = addModel(s.Fork.Models, u, p.Rate)
			}
			if calls != nil {
				calls.response(t, p, u)
			}
		case *tapefmt.BreakerTrip:
			s.Breaker = p
		case *tapefmt.AgentTurn:
			s.Reported += p.Reported() // reported by the agent: spending jukebox did not see
		}
		if calls != nil {
			calls.frame(t, f, p)
		}
	}
	if n := t.Len(); n > 0 {
		_, last, err := t.KindAt(n - 1)
		if err != nil {
			return s, err
		}
		s.Duration = last
	}
	s.SetCost()
	return s, nil
}

// addModel is models with the call c (recorded at rate, when not nil)
// counted under its model.
func addModel(models []ModelTokens, c llmwire.CallUsage, rate *tapefmt.Rate) []ModelTokens {
	i := slices.IndexFunc(models, func(m ModelTokens) bool { return m.Model == c.Model })
	if i < 0 {
		models = append(models, ModelTokens{Model: c.Model})
		i = len(models) - 1
	}
	if rate != nil {
		models[i].Rate = rate
	}
	models[i].Calls++
	models[i].Usage = models[i].Usage.Plus(c.Usage)
	return models
}

// ExitText is the run's exit status for display: "0", "signal: SIGINT",
// or "running?" for a tape without an end frame.
func (s Summary) ExitText() string {
	switch {
	case s.Exit == nil:
		return "no end"
	case s.Exit.Signal != "":
		return s.Exit.Signal
	case s.Exit.ExitCode < 0 && s.Exit.Reason != "":
		return string(s.Exit.Reason) // stopped before it had an exit status, not -1
	}
	return fmt.Sprint(s.Exit.ExitCode)
}
