package engine

import (
	"cmp"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// CheckBreaker runs a recorded run's model calls, in their order on the
// tape, through a breaker with limits l, as the recorder would have seen
// them: the trip it would have made, or nil. Times are the tape's, so
// velocities hold as they did. It is for choosing limits on real runs
// before setting them (`jukebox breaker`). Calls are priced at the rates
// the tape recorded (llm.response rate), as every view prices them, else
// by the price table. A fork's calls before its fork point were answered
// from its parent's tape, free: the live breaker never saw them, and
// neither does this.
func CheckBreaker(t *tapefmt.Tape, l breaker.Limits) (*breaker.Trip, error) {
	rates, err := recordedRates(t)
	if err != nil {
		return nil, err
	}
	b := breaker.NewSet(l, func(model string, u tapefmt.Usage) (float64, bool) {
		if r, ok := rates[model]; ok {
			return r.Cost(u), true
		}
		return prices.Cost(model, u)
	})
	type request struct {
		call  llmwire.Call
		agent string
		seq   uint64
	}
	reqs := map[uint64]request{}
	start := t.Created()
	lastTurn := ""
	live := uint64(0) // the first call that went live: a fork's calls before it came from its parent
	for f, err := range t.Frames(tapefmt.KindRunStart, tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindAgentTurn) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		switch p := p.(type) {
		case *tapefmt.RunStart:
			if call, fork := p.ForkCall(); fork && f.Seq == 0 {
				live = call
			}
		case *tapefmt.AgentTurn:
			lastTurn = cmp.Or(p.Agent, lastTurn)
			if trip := b.After(lastTurn, turnOf(f.Seq, p, start.Add(f.Time))); trip != nil {
				return trip, nil
			}
		case *tapefmt.LLMRequest:
			if p.Call < live {
				continue
			}
			body, err := blobOf(t, p.Body)
			if err != nil {
				return nil, err
			}
			agent := llmwire.AgentOf(p.Header, lastTurn)
			call := llmwire.RequestCall(p, func(tapefmt.Hash) ([]byte, error) { return body, nil })
			reqs[p.Call] = request{call: call, agent: agent, seq: f.Seq}
			if trip := b.Before(agent, callOf(f.Seq, call.Model, call.Body)); trip != nil {
				return trip, nil
			}
		case *tapefmt.LLMResponse:
			if p.Call < live {
				continue
			}
			r := reqs[p.Call]
			body, err := blobOf(t, p.Body)
			if err != nil {
				return nil, err
			}
			if trip := b.After(r.agent, answerOf(f.Seq, r.seq, p, body, func() llmwire.Call { return r.call }, nil, start.Add(f.Time))); trip != nil {
				return trip, nil
			}
		}
	}
	return nil, nil
}

// recordedRates are the rates a tape's calls were recorded at, by the
// model their frames name.
func recordedRates(t *tapefmt.Tape) (map[string]tapefmt.Rate, error) {
	rates := map[string]tapefmt.Rate{}
	for f, err := range t.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		if r := p.(*tapefmt.LLMResponse); r.Rate != nil && r.Model != "" {
			rates[r.Model] = *r.Rate
		}
	}
	return rates, nil
}

// blobOf reads a blob, or nothing for a frame that names none.
func blobOf(t *tapefmt.Tape, h tapefmt.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	return t.Blob(h)
}

// callOf is a model call as the breaker sees it before it goes out, from
// its request's decoded body (llmwire.DecodeBody): the tool results it
// carries, its size, the output it asks for.
func callOf(seq uint64, model string, text []byte) breaker.Call {
	var results []breaker.ToolResult
	for _, r := range llmwire.RequestToolResults(text) {
		results = append(results, breaker.ToolResult(r))
	}
	return breaker.Call{Seq: seq, Model: model, InputTokens: breaker.EstimateTokens(text),
		MaxOutput: llmwire.RequestMaxOutput(text), Results: results}
}

// answerOf is an answer as the breaker sees it: its usage and model as
// every view finds them (llmwire.ResponseUsage, counted where the answer
// reports none: the breaker's caps hold on those counts too), what it said
// and the tools it called, and its call's request frame (reqSeq) and
// output limit.
// usage, when not nil, is the answer's as the recorder already made it
// (proxy.recordResponse): it is not counted again.
func answerOf(seq, reqSeq uint64, resp *tapefmt.LLMResponse, body []byte, request func() llmwire.Call, usage *llmwire.CallUsage, at time.Time) breaker.Answer {
	call := request()
	var c llmwire.CallUsage
	if usage != nil {
		c = *usage
	} else {
		c = llmwire.ResponseUsage(resp, func(tapefmt.Hash) ([]byte, error) { return body, nil }, func() llmwire.Call { return call })
	}
	text, uses := llmwire.ResponseAnswer(llmwire.DecodeBody(resp.Header, body).Text)
	calls := make([]breaker.ToolUse, len(uses))
	for i, u := range uses {
		calls[i] = breaker.ToolUse(u)
	}
	return breaker.Answer{Seq: seq, Request: reqSeq, MaxOutput: llmwire.RequestMaxOutput(call.Body), Model: c.Model,
		Usage: c.Usage, Text: text, ToolCalls: calls, At: at, Estimated: c.Estimated}
}

// turnOf is a turn an agent reported (the control API) as the breaker
// sees it: its text, checked for near-duplicates as an answer's is, and
// the cost it reported.
func turnOf(seq uint64, t *tapefmt.AgentTurn, at time.Time) breaker.Answer {
	return breaker.Answer{Seq: seq, Model: t.Model, Text: t.Text, Reported: t.Reported(), At: at}
}
