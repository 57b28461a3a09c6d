package breaker

import (
	"fmt"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Before checks a call before it goes out: the tool results it carries
// complete actions (repeats, oscillation), and the most it can cost must
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
	if c.Model == "" && c.InputTokens == 0 {
		// Neither a model nor any text: listing the models, fetching a
		// file. Nothing to price, nothing for the cap to weigh.
		return nil
	}
	if t := b.priced(c.Model, c.Seq); t != nil {
		return b.tripped(t)
	}
	if t := b.capped(c); t != nil {
		return b.tripped(t)
	}
	return nil
}

// After counts an answer: its cost (MaxCost, velocities), its tool calls
// (whose results the next calls carry) and its text (near-duplicates).
func (b *Breaker) After(a Answer) *Trip {
	b.release(a.Request)
	if b.trip != nil {
		return b.trip
	}
	usd, _ := b.priceOf(a.Model, a.Usage)
	usd += a.Reported
	b.cost += usd
	b.tokens += a.Usage.Total()
	b.estimated = b.estimated || a.Estimated
	b.longest = max(b.longest, a.Usage.Output)
	for _, u := range a.ToolCalls {
		b.pending[u.ID] = pendingUse{ToolUse: u, seq: a.Seq}
	}
	if t := b.velocity(a, usd); t != nil {
		return b.tripped(t)
	}
	if b.l.MaxCost > 0 && past(b.cost, b.l.MaxCost) {
		spent, limit := b.spentText(b.l.MaxCost)
		return b.tripped(&Trip{Rule: RuleCost, Evidence: []uint64{a.Seq},
			Reason: fmt.Sprintf("%s %s cost %s, past the cap of %s (%s)", b.who, has(b.who), spent, limit, overWhy(a))})
	}
	if t := b.semantic(a); t != nil {
		return b.tripped(t)
	}
	return nil
}

// release forgets what a call in flight held of the cap: its answer came,
// or it was not sent.
func (b *Breaker) release(request uint64) { delete(b.held, request) }

// capped holds MaxCost before a call: the cost so far, what the calls in
// flight may still cost, and the most this call can cost must stay within
// it. The most a call can cost is its counted input and the output limit
// it asks for; a call that asks none is held to its input and the run's
// longest answer so far, which a longer answer can pass (After trips
// then).
func (b *Breaker) capped(c Call) *Trip {
	if b.l.MaxCost <= 0 {
		return nil
	}
	out := c.MaxOutput
	if out <= 0 {
		out = b.longest
	}
	next, _ := b.priceOf(c.Model, tapefmt.Usage{Input: c.InputTokens, Output: out})
	var held float64
	for _, h := range b.held {
		held += h
	}
	if !past(b.cost+held+next, b.l.MaxCost) {
		b.held[c.Seq] = next
		return nil
	}
	spent, limit := b.spentText(b.l.MaxCost)
	inFlight := ""
	if held > 0 {
		inFlight = fmt.Sprintf(", calls in flight may cost %s more,", USD(held))
	}
	var next2 string
	if c.MaxOutput > 0 {
		next2 = fmt.Sprintf("the next call (%s: %d input tokens counted, at most %d output tokens as it asks) could cost up to %s",
			c.Model, c.InputTokens, c.MaxOutput, USD(next))
	} else {
		next2 = fmt.Sprintf("the next call (%s: %d input tokens counted, and %d output tokens, the run's longest answer, as it sets no max_tokens) would cost about %s",
			c.Model, c.InputTokens, out, USD(next))
	}
	return &Trip{Rule: RuleCost, Evidence: []uint64{c.Seq},
		Reason: fmt.Sprintf("%s %s cost %s%s and %s more, past the cap of %s; it was not sent", b.who, has(b.who), spent, inFlight, next2, limit)}
}

// past says whether an amount in dollars is past a limit by more than
// the rounding of the sums that made it: $0.20 and $0.10 make
// $0.30000000000000004 in binary floating point, which is within a cap of
// $0.30 (it was called past it, "$0.3000, past the cap of $0.3000"). A
// billionth of the limit is far above that rounding and far below a cent
// of any cap.
func past(usd, limit float64) bool {
	return usd > limit && usd-limit > limit*1e-9
}

// overWhy says why an answer took the cost past the cap although the call
// was checked before it went out.
func overWhy(a Answer) string {
	switch {
	case a.Reported > 0:
		// The turn that crossed the cap, not the part of the cost that
		// was reported ("with $0.0200 the agent reported" read as that).
		return fmt.Sprintf("taken past it by %s the agent reported for a turn", USD(a.Reported))
	case a.Request == 0:
		return "an answer of a call the breaker did not check before"
	case a.MaxOutput <= 0:
		return fmt.Sprintf("the call set no max_tokens and its answer, %d tokens, was longer than the run's longest before; "+
			"set max_tokens (max_completion_tokens, max_output_tokens) on requests to make the cap exact", a.Usage.Output)
	case a.Usage.Output > a.MaxOutput:
		return fmt.Sprintf("its answer, %d tokens, went past the %d it asked for", a.Usage.Output, a.MaxOutput)
	}
	return "its input was larger than counted at four bytes a token"
}

// has is the verb for who: "the run has", "its calls have".
func has(who string) string {
	if who == agentWho {
		return "have"
	}
	return "has"
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
		Reason: fmt.Sprintf("model %q has no price, so a limit in dollars cannot hold; give a rate for unknown models (--unknown-model-rate, dollars a million tokens, or unknown_model_rate in --breaker-config) or its price (--prices)", model)}
}

// priceOf prices a call, with the unknown-model rate for models without a
// price (UnknownRate).
func (b *Breaker) priceOf(model string, u tapefmt.Usage) (float64, bool) {
	if usd, ok := b.price(model, u); ok {
		return usd, true
	}
	if b.l.UnknownModelRate > 0 {
		return UnknownRate(b.l.UnknownModelRate).Cost(u), true
	}
	return 0, false
}

// UnknownRate is the rate of a model without a price under an
// unknown-model rate of perMillion dollars a million tokens: every token
// (input, cached, written to the cache, output) at it, as a tape records
// it.
func UnknownRate(perMillion float64) tapefmt.Rate {
	r := perMillion / 1e6
	return tapefmt.Rate{Input: r, Output: r, CacheRead: r, CacheWrite: r, Source: tapefmt.RateUnknownModel}
}
