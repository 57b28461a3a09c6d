package breaker

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Rules a Trip names.
const (
	RuleCost           = "cost"            // the cost so far plus the next call's estimate passes MaxCost
	RuleTokenVelocity  = "token-velocity"  // tokens in the last minute pass MaxTokensPerMin
	RuleCostVelocity   = "cost-velocity"   // dollars in the last minute pass MaxCostPerMin
	RuleRepeat         = "repeat"          // the same tool action the MaxRepeat-th time
	RuleOscillation    = "oscillation"     // two tool actions alternating MaxRepeat times
	RuleSemanticRepeat = "semantic-repeat" // near-duplicate answers the MaxSemanticRepeat-th time
	RuleUnknownModel   = "unknown-model"   // a model without a price under a cost or velocity limit
)

// Window is the span velocities are measured over.
const Window = time.Minute

// PriceFunc prices one call (prices.Cost); known is false for a model
// without a price.
type PriceFunc func(model string, u tapefmt.Usage) (usd float64, known bool)

// Trip is why the breaker stopped a run, with its evidence: the frames
// (llm.request and llm.response sequence numbers) that show it.
type Trip struct {
	Rule     string   `json:"rule"`
	Reason   string   `json:"reason"`
	Cost     float64  `json:"cost"`   // dollars so far
	Tokens   int64    `json:"tokens"` // tokens so far
	Evidence []uint64 `json:"evidence,omitempty"`
}

// Call is a model call as the breaker sees it before it goes out.
type Call struct {
	Seq   uint64 // its llm.request frame
	Model string
	// InputTokens is an estimate of its input (EstimateTokens), and
	// MaxOutput the output limit it asks for (0: none asked).
	InputTokens, MaxOutput int64
	// Results are the tool results it carries for earlier tool calls.
	Results []ToolResult
}

// Answer is a model call's answer as the breaker sees it.
type Answer struct {
	Seq       uint64 // its llm.response frame
	Model     string
	Usage     tapefmt.Usage
	Text      string    // what the model said
	ToolCalls []ToolUse // the tools it called
	At        time.Time
	// Reported is a cost in dollars the agent reported itself (a turn's
	// cost_usd through the control API): spending jukebox did not see,
	// counted as it is, beside what Usage is priced at.
	Reported float64
	// Estimated says the answer reported no usage and Usage was counted
	// from the text (llmwire.CallUsage.Estimated): caps hold on it all
	// the same, and a trip's reason marks the cost "~".
	Estimated bool
}

// ToolUse is one tool call of an answer.
type ToolUse struct{ ID, Name, Args string }

// ToolResult is a tool's result as a later request carries it.
type ToolResult struct{ ID, Content string }

// Breaker follows one run (or one agent of it: Set) and says when it must
// stop. It is not safe for
// concurrent use; the recorder calls it under its own lock.
type Breaker struct {
	l     Limits
	price PriceFunc

	cost      float64
	tokens    int64
	estimated bool    // some of cost and tokens were counted, not reported
	outputs   []int64 // output tokens of each answer, for estimates
	spent     []spend // the last Window's spending
	unknown   map[string]bool

	pending map[string]pendingUse // tool call id → the call, until its result comes
	actions []action
	seen    map[string][]uint64 // action key → the frames it was seen at
	answers []answerPrint

	trip *Trip
}

type spend struct {
	at     time.Time
	tokens int64
	usd    float64
	seq    uint64
}

type pendingUse struct {
	ToolUse
	seq uint64
}

// action is a tool call with its result: what the agent did and got.
type action struct {
	key   string // tool, canonical arguments, result
	shape string // tool and canonical arguments
	seq   uint64 // the request frame that carried the result
}

// New returns a breaker for limits (valid: Limits.Validate), pricing calls
// with price.
func New(l Limits, price PriceFunc) *Breaker {
	return &Breaker{l: l, price: price, pending: map[string]pendingUse{}, seen: map[string][]uint64{}, unknown: map[string]bool{}}
}

// Tripped is the trip, once the breaker has tripped; nil before.
func (b *Breaker) Tripped() *Trip { return b.trip }

// Spent is the run's cost and tokens so far (a call without a price adds
// its tokens, not a cost).
func (b *Breaker) Spent() (usd float64, tokens int64) { return b.cost, b.tokens }

// Before checks a call before it goes out: the tool results it carries
// complete actions (repeats, oscillation), and its estimated cost must
// keep the run within MaxCost. A non-nil Trip means: do not send it.
func (b *Breaker) Before(c Call) *Trip {
	if b.trip != nil {
		return b.trip
	}
	for _, r := range c.Results {
		p, ok := b.pending[r.ID]
		if !ok {
			continue
		}
		delete(b.pending, r.ID)
		if t := b.act(p, r, c.Seq); t != nil {
			return b.tripped(t)
		}
	}
	if t := b.priced(c.Model, c.Seq); t != nil {
		return b.tripped(t)
	}
	if b.l.MaxCost > 0 {
		next, _ := b.priceOf(c.Model, tapefmt.Usage{Input: c.InputTokens, Output: b.expectedOutput(c.MaxOutput)})
		if b.cost+next > b.l.MaxCost {
			return b.tripped(&Trip{Rule: RuleCost, Evidence: []uint64{c.Seq},
				Reason: fmt.Sprintf("the run has cost %s and the next call (%s) would cost about $%.4f more, past the cap of $%.4f",
					b.spentText(), c.Model, next, b.l.MaxCost)})
		}
	}
	return nil
}

// After counts an answer: its cost (MaxCost, velocities), its tool calls
// (whose results the next calls carry) and its text (near-duplicates).
func (b *Breaker) After(a Answer) *Trip {
	if b.trip != nil {
		return b.trip
	}
	usd, _ := b.priceOf(a.Model, a.Usage)
	usd += a.Reported
	b.cost += usd
	b.tokens += a.Usage.Total()
	b.estimated = b.estimated || a.Estimated
	b.outputs = append(b.outputs, a.Usage.Output)
	for _, u := range a.ToolCalls {
		b.pending[u.ID] = pendingUse{ToolUse: u, seq: a.Seq}
	}
	if t := b.velocity(a, usd); t != nil {
		return b.tripped(t)
	}
	if b.l.MaxCost > 0 && b.cost > b.l.MaxCost {
		why := "the call's answer was longer than estimated"
		if a.Reported > 0 {
			why = fmt.Sprintf("with $%.4f the agent reported", a.Reported)
		}
		return b.tripped(&Trip{Rule: RuleCost, Evidence: []uint64{a.Seq},
			Reason: fmt.Sprintf("the run has cost %s, past the cap of $%.4f (%s)", b.spentText(), b.l.MaxCost, why)})
	}
	if t := b.semantic(a); t != nil {
		return b.tripped(t)
	}
	return nil
}

func (b *Breaker) tripped(t *Trip) *Trip {
	t.Cost, t.Tokens = b.cost, b.tokens
	b.trip = t
	return t
}

// priced trips on a model without a price when a limit in dollars is set
// and no rate stands in for unknown models.
func (b *Breaker) priced(model string, seq uint64) *Trip {
	if b.l.MaxCost <= 0 && b.l.MaxCostPerMin <= 0 {
		return nil
	}
	if _, known := b.priceOf(model, tapefmt.Usage{}); known {
		return nil
	}
	return &Trip{Rule: RuleUnknownModel, Evidence: []uint64{seq},
		Reason: fmt.Sprintf("model %q has no price, so a limit in dollars cannot hold; give a rate for unknown models", model)}
}

// priceOf prices a call, with the unknown-model rate for models without a
// price.
func (b *Breaker) priceOf(model string, u tapefmt.Usage) (float64, bool) {
	if usd, ok := b.price(model, u); ok {
		return usd, true
	}
	if b.l.UnknownModelRate > 0 {
		return float64(u.Input+u.Output) * b.l.UnknownModelRate / 1e6, true
	}
	return 0, false
}

// expectedOutput is the output a call is expected to produce: the limit it
// asks for, else the longest answer of the run so far.
func (b *Breaker) expectedOutput(asked int64) int64 {
	if asked > 0 {
		return asked
	}
	var most int64
	for _, o := range b.outputs {
		most = max(most, o)
	}
	return most
}

func (b *Breaker) velocity(a Answer, usd float64) *Trip {
	b.spent = append(b.spent, spend{at: a.At, tokens: a.Usage.Total(), usd: usd, seq: a.Seq})
	for len(b.spent) > 0 && a.At.Sub(b.spent[0].at) > Window {
		b.spent = b.spent[1:]
	}
	var tokens int64
	var dollars float64
	var frames []uint64
	for _, s := range b.spent {
		tokens, dollars, frames = tokens+s.tokens, dollars+s.usd, append(frames, s.seq)
	}
	switch {
	case b.l.MaxTokensPerMin > 0 && float64(tokens) > b.l.MaxTokensPerMin:
		return &Trip{Rule: RuleTokenVelocity, Evidence: frames,
			Reason: fmt.Sprintf("%s%d tokens in the last minute, past the limit of %.0f a minute", b.mark(), tokens, b.l.MaxTokensPerMin)}
	case b.l.MaxCostPerMin > 0 && dollars > b.l.MaxCostPerMin:
		return &Trip{Rule: RuleCostVelocity, Evidence: frames,
			Reason: fmt.Sprintf("$%.4f in the last minute, past the limit of $%.4f a minute", dollars, b.l.MaxCostPerMin)}
	}
	return nil
}

// act records a completed tool action and trips on repeats and
// oscillation.
func (b *Breaker) act(p pendingUse, r ToolResult, seq uint64) *Trip {
	shape := p.Name + "\x00" + canonicalJSON(p.Args)
	a := action{key: shape + "\x00" + r.Content, shape: shape, seq: seq}
	b.actions = append(b.actions, a)
	b.seen[a.key] = append(b.seen[a.key], p.seq, seq)
	if n := b.l.MaxRepeat; n > 0 {
		if frames := b.seen[a.key]; len(frames)/2 >= n {
			return &Trip{Rule: RuleRepeat, Evidence: frames,
				Reason: fmt.Sprintf("tool %s called with the same arguments and the same result %d times (%s)", p.Name, len(frames)/2, oneLine(p.Args))}
		}
		if frames, ok := b.oscillating(n); ok {
			prev := b.actions[len(b.actions)-2]
			return &Trip{Rule: RuleOscillation, Evidence: frames,
				Reason: fmt.Sprintf("the agent alternated between two tool calls %d times (%s and %s)", n, shapeText(prev.shape), shapeText(a.shape))}
		}
	}
	return nil
}

// oscillating reports whether the last 2n actions alternate between two
// different calls (tool and arguments, whatever their results), with the
// frames that show it.
func (b *Breaker) oscillating(n int) ([]uint64, bool) {
	if len(b.actions) < 2*n {
		return nil, false
	}
	last := b.actions[len(b.actions)-2*n:]
	if last[0].shape == last[1].shape {
		return nil, false
	}
	var frames []uint64
	for i, a := range last {
		if a.shape != last[i%2].shape {
			return nil, false
		}
		frames = append(frames, a.seq)
	}
	return frames, true
}

// canonicalJSON is JSON arguments with their keys sorted and spacing
// dropped, or the text itself when it is not JSON.
func canonicalJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func shapeText(shape string) string {
	name, args, _ := cut0(shape)
	return name + " " + oneLine(args)
}

func cut0(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// oneLine shortens s to one line of at most 80 characters.
func oneLine(s string) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return string(r)
}

// Set is the breakers of a run: one for the run and, where Limits.Agents
// names limits for an agent, one for that agent's calls. It is not safe
// for concurrent use.
type Set struct {
	run    *Breaker // nil when the run has no limits of its own
	agents map[string]*Breaker
	trip   *Trip
}

// NewSet returns the breakers for limits.
func NewSet(l Limits, price PriceFunc) *Set {
	s := &Set{agents: map[string]*Breaker{}}
	if !l.own() {
		s.run = New(l, price)
	}
	for name, al := range l.Agents {
		if !al.own() {
			s.agents[name] = New(al, price)
		}
	}
	return s
}

// Tripped is the first trip of any of the set's breakers; once one has
// tripped, the run stops.
func (s *Set) Tripped() *Trip { return s.trip }

// Before checks a call of agent ("" for none) against the run's breaker
// and the agent's.
func (s *Set) Before(agent string, c Call) *Trip {
	return s.each(agent, func(b *Breaker) *Trip { return b.Before(c) })
}

// After counts an answer of agent.
func (s *Set) After(agent string, a Answer) *Trip {
	return s.each(agent, func(b *Breaker) *Trip { return b.After(a) })
}

func (s *Set) each(agent string, f func(*Breaker) *Trip) *Trip {
	if s.trip != nil {
		return s.trip
	}
	var first *Trip
	if s.run != nil {
		first = f(s.run)
	}
	if b := s.agents[agent]; b != nil && agent != "" {
		if t := f(b); t != nil && first == nil {
			at := *t
			at.Reason = "agent " + agent + ": " + t.Reason
			first = &at
		}
	}
	s.trip = first
	return first
}
