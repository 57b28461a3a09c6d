package engine

import (
	"net/http"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// tripGrace is how long an agent has after a trip to take the refusal and
// exit by itself (its SDK surfaces the error, the agent reports it) before
// it is stopped: SIGTERM, then SIGKILL 3 s later.
const tripGrace = 5 * time.Second

// guard puts the circuit breaker (package breaker) between the agent and
// the live upstream: each live call is checked before it goes out and
// each answer after it comes back. On a trip it writes the breaker.trip
// frame, refuses every call from then on (the one that tripped it, or
// the next) and stops the agent tripGrace later unless it has exited.
type guard struct {
	mu    sync.Mutex
	b     *breaker.Set
	trip  func(*breaker.Trip) // writes the frame; called once
	stop  func()              // stops the agent
	fired bool
	timer *time.Timer
}

func newGuard(l breaker.Limits, trip func(*breaker.Trip), stop func()) *guard {
	if l.Empty() {
		return nil
	}
	return &guard{b: breaker.NewSet(l, prices.Cost), trip: trip, stop: stop}
}

// before checks a live call; true means it was refused with an error the
// agent's SDK surfaces and does not retry, and the agent is being stopped.
func (g *guard) before(w http.ResponseWriter, x *exchange, seq uint64, agent string) (tapefmt.LLMResponse, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d := x.decode()
	t := g.b.Before(agent, callOf(seq, d.info.Model, d.text))
	if t == nil {
		return tapefmt.LLMResponse{}, false
	}
	g.fire(t)
	msg := "jukebox: circuit breaker tripped (" + t.Rule + "): " + t.Reason
	apiError(w, http.StatusBadRequest, msg)
	if g.timer == nil {
		g.timer = time.AfterFunc(tripGrace, g.stop)
	}
	return tapefmt.LLMResponse{Status: http.StatusBadRequest, Error: msg}, true
}

// after counts a live call's answer.
func (g *guard) after(x *exchange, a answer, seq uint64, agent string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fired {
		return
	}
	if t := g.b.After(agent, answerOf(seq, &a.resp, a.body, x.llmCall, time.Now())); t != nil {
		g.fire(t)
		if g.timer == nil {
			g.timer = time.AfterFunc(tripGrace, g.stop)
		}
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
		if g.timer == nil {
			g.timer = time.AfterFunc(tripGrace, g.stop)
		}
	}
	return t
}

// tripped is the trip, once there is one.
func (g *guard) tripped() *breaker.Trip {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.b.Tripped()
}

func (g *guard) fire(t *breaker.Trip) {
	if !g.fired {
		g.fired = true
		g.trip(t)
	}
}
