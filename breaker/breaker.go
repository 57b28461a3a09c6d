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
	// Agent is the agent whose own limits tripped ("" for the run's):
	// only that agent's calls are refused, unless Limits.TripAll.
	Agent string `json:"agent,omitempty"`
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
	Request   uint64 // its call's llm.request frame (Call.Seq); 0 for a reported turn
	MaxOutput int64  // the output limit its call asked for (0: none)
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
	who   string // whose spending it follows, for reasons: "the run", agentWho

	cost      float64
	tokens    int64
	estimated bool               // some of cost and tokens were counted, not reported
	longest   int64              // output tokens of the run's longest answer, for estimates
	held      map[uint64]float64 // the most each call in flight may cost, by its request frame
	spent     []spend            // the last Window's spending
	unknown   map[string]bool

	pending map[string]pendingUse // tool call id → the call, until its result comes
	actions []action
	seen    map[string][]uint64 // action key → the frames it was seen at since the last new action
	known   map[string]bool     // every action key seen in the run
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
	return &Breaker{l: l, price: price, who: "the run", held: map[uint64]float64{},
		pending: map[string]pendingUse{}, seen: map[string][]uint64{}, known: map[string]bool{}, unknown: map[string]bool{}}
}

// Tripped is the trip, once the breaker has tripped; nil before.
func (b *Breaker) Tripped() *Trip { return b.trip }

// Spent is the run's cost and tokens so far (a call without a price adds
// its tokens, not a cost).
func (b *Breaker) Spent() (usd float64, tokens int64) { return b.cost, b.tokens }

func (b *Breaker) tripped(t *Trip) *Trip {
	t.Cost, t.Tokens = b.cost, b.tokens
	b.trip = t
	return t
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
	case b.l.MaxCostPerMin > 0 && past(dollars, b.l.MaxCostPerMin):
		spent, limit := USDPair(dollars, b.l.MaxCostPerMin)
		return &Trip{Rule: RuleCostVelocity, Evidence: frames,
			Reason: fmt.Sprintf("%s%s in the last minute, past the limit of %s a minute", b.mark(), spent, limit)}
	}
	return nil
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
