package engine

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// tripGrace is how long an agent has after a trip to take the refusal and
// exit by itself (its SDK surfaces the error, the agent reports it) before
// it is stopped: SIGTERM, then SIGKILL 3 s later.
const tripGrace = 5 * time.Second

// guard puts the circuit breaker (package breaker) between the agent and
// the live upstream: each live call is checked before it goes out and
// each answer after it comes back. On a trip it writes a breaker.trip
// frame and refuses the calls the trip holds (breaker.Set: every call, or
// those of the agent whose own limits tripped), with an error the agent's
// SDK surfaces and does not retry (tripError); a trip that holds every
// call stops the agent tripGrace later unless it has exited.
type guard struct {
	mu    sync.Mutex
	b     *breaker.Set
	trip  func(*breaker.Trip) // writes the frame; called once a trip
	stop  func()              // stops the agent
	fired map[*breaker.Trip]bool
	timer *time.Timer
}

func newGuard(l breaker.Limits, trip func(*breaker.Trip), stop func()) *guard {
	if l.Empty() {
		return nil
	}
	return &guard{b: breaker.NewSet(l, prices.Cost), trip: trip, stop: stop, fired: map[*breaker.Trip]bool{}}
}

// before checks a live call; true means it was refused with an error the
// agent's SDK surfaces and does not retry.
func (g *guard) before(w http.ResponseWriter, x *exchange, seq uint64, agent string) (answer, bool) {
	if llmwire.Free(x.path) {
		return answer{}, false // counting tokens: no spending, no step of the agent's
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d := x.decode()
	t := g.b.Before(agent, callOf(seq, d.info.Model, d.text))
	if t == nil {
		return answer{}, false
	}
	g.fire(t)
	msg := llmwire.TripPrefix + " (" + t.Rule + "): " + t.Reason
	resp, body := tripAnswer(msg, t.Rule, t.Agent)
	writeTrip(w, resp, body)
	return answer{resp: resp, body: body}, true
}

// after counts a live call's answer.
// usage is the answer's as the recorder counted it, nil when it did not.
func (g *guard) after(x *exchange, a answer, seq uint64, agent string, usage *llmwire.CallUsage) {
	if llmwire.Free(x.path) {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if t := g.b.After(agent, answerOf(seq, x.reqSeq, &a.resp, a.body, x.llmCall, usage, time.Now())); t != nil {
		g.fire(t)
	}
}

// turn counts a turn the agent reported (its text and cost): a trip stops
// the agent as a call's would, and is returned.
func (g *guard) turn(a breaker.Answer, agent string) *breaker.Trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.b.After(agent, a)
	if t != nil {
		g.fire(t)
	}
	return t
}

// tripped is the first trip, once there is one.
func (g *guard) tripped() *breaker.Trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Tripped()
}

// fire writes a trip's frame the first time it is seen, and stops the
// agent tripGrace later when the trip holds every call.
func (g *guard) fire(t *breaker.Trip) {
	if !g.fired[t] {
		g.fired[t] = true
		g.trip(t)
	}
	if g.b.Stops(t) && g.timer == nil {
		g.timer = time.AfterFunc(tripGrace, g.stop)
	}
}

// rate is the price a live call of model is priced at, recorded on its
// llm.response so that every view prices it as the breaker did: the price
// table in force (a --prices file's included), else the unknown-model
// rate; nil for a model without either.
func (p *proxy) rate(model string) *tapefmt.Rate {
	if r, ok := prices.TapeRate(model); ok {
		return &r
	}
	if p.unknownRate > 0 {
		r := breaker.UnknownRate(p.unknownRate)
		return &r
	}
	return nil
}

// TripCode is the code of the error a call refused by the circuit breaker
// gets: error.type and error.code of its JSON body, which the OpenAI and
// Anthropic SDKs surface (error.code, error.type), beside error.rule (the
// rule that tripped) and error.agent (whose limits, when an agent's own).
const TripCode = "jukebox_breaker_tripped"

// tripAnswer is the answer to a refused call, msg (TripPrefix, the rule,
// the reason): HTTP 400, which the SDKs do not retry, with a JSON error
// carrying TripCode, the rule and the agent whose limits tripped (when an
// agent's own). The llm.response frame keeps it whole, so that a replay
// answers the refused call with the same bytes.
func tripAnswer(msg, rule, agent string) (tapefmt.LLMResponse, []byte) {
	e := map[string]string{"type": TripCode, "code": TripCode, "rule": rule, "message": msg}
	if agent != "" {
		e["agent"] = agent
	}
	body, _ := json.Marshal(map[string]any{"type": "error", "error": e})
	body = append(body, '\n')
	h := http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}}
	return tapefmt.LLMResponse{Status: http.StatusBadRequest, Header: h, Size: int64(len(body)), Error: msg}, body
}

// writeTrip writes a refused call's answer to the agent.
func writeTrip(w http.ResponseWriter, resp tapefmt.LLMResponse, body []byte) {
	maps.Copy(w.Header(), resp.Header)
	w.WriteHeader(resp.Status)
	w.Write(body)
}

// tripOf reads the rule and the reason back from a refusal's message
// ("jukebox: circuit breaker tripped (RULE): REASON").
func tripOf(msg string) (rule, reason string) {
	rule, reason, _ = strings.Cut(strings.TrimPrefix(msg, llmwire.TripPrefix+" ("), ")")
	return rule, strings.TrimLeft(reason, ": ")
}

// recordedTrip is the answer to a refused call that a tape from before
// refusals kept their body holds (its status and message only), built
// again from the message: the rule is in it, the agent is not.
func recordedTrip(r *tapefmt.LLMResponse) (tapefmt.LLMResponse, []byte) {
	rule, _ := tripOf(r.Error)
	resp, body := tripAnswer(r.Error, rule, "")
	resp.Call = r.Call
	return resp, body
}
