package engine

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Speed is how fast replay plays streamed responses: 0 is as fast as the
// child reads, 1 is the recorded pace, 2 twice as fast, and so on.
type Speed float64

// ParseSpeed reads "instant", "realtime" or "Nx" (e.g. "4x", "0.5x").
func ParseSpeed(s string) (Speed, error) {
	switch s {
	case "instant", "":
		return 0, nil
	case "realtime":
		return 1, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || !strings.HasSuffix(s, "x") || f <= 0 {
		return 0, fmt.Errorf("speed %q: want instant, realtime or a factor such as 2x", s)
	}
	return Speed(f), nil
}

// tapeBackend answers calls from a recorded tape, never from the network.
// A call that matches nothing goes to the fallback when there is one
// (ReplayOptions.Live), else it is answered with an error and
// reported.
type tapeBackend struct {
	m        *Matcher
	tape     *tapefmt.Tape
	speed    Speed
	fallback backend
	onDiv    func(*Divergence)
	// world answers telemetry locally and sends the --live hosts' requests
	// live (nil: telemetry alone); served, local and passed count the
	// requests answered from the tape, by jukebox and live that way.
	world                 *openWorld
	served, local, passed atomic.Uint64
	// unreadable is the first recorded answer that could not be read from
	// the tape: the call failed, and the replay fails with it.
	unreadable atomic.Pointer[error]
	onLive     func() // called once, at the first request sent live to a --live host
	// interrupted, when the recording was interrupted (Ctrl-C) while
	// calls were in flight, is called as the replay reaches one of them:
	// the agent is interrupted there too (cutByInterrupt).
	interrupted func(c *Call)

	mu       sync.Mutex
	diverged bool // after the first divergence, every call goes to the fallback

	// A fork's tape is replayed with its overrides applied again at the
	// call they were made at, since the agent sends the original request.
	forkCall     int64 // -1 when the tape is not a fork
	overrides    Overrides
	epMu         sync.Mutex
	forkEndpoint string // the fork call's method and path, once seen (under epMu)
}

// match finds x's call on the tape. Once a call has diverged, every later
// one goes unmatched; the first divergence alone is returned, so that two
// calls diverging at once report the first.
func (t *tapeBackend) match(x *exchange) (*Call, *Divergence) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.diverged {
		return nil, nil
	}
	c, d := t.m.Match(x.matchRequest())
	if d != nil {
		t.diverged = true
	}
	return c, d
}

// prepare re-applies a fork's overrides to the call they were made at,
// and under ScopeAll to every later call to that call's endpoint.
func (t *tapeBackend) prepare(x *exchange) {
	endpoint := x.req.Method + " " + x.path
	switch {
	case x.plain || t.forkCall < 0 || int64(x.call) < t.forkCall:
		return
	case int64(x.call) == t.forkCall:
		t.epMu.Lock()
		t.forkEndpoint = endpoint
		t.epMu.Unlock()
	default:
		t.epMu.Lock()
		same := t.forkEndpoint == endpoint
		t.epMu.Unlock()
		if !t.overrides.reaches() || !same {
			return
		}
	}
	if body, err := t.overrides.Apply(x.provider.Name, x.path, x.body, int64(x.call) == t.forkCall); err == nil {
		x.body = body
	}
}

func (t *tapeBackend) respond(w http.ResponseWriter, x *exchange) answer {
	if a, ok := t.outside(w, x); ok {
		return a
	}
	c, first := t.match(x)
	if first != nil {
		t.onDiv(first)
	}
	if c == nil {
		if t.fallback != nil {
			return t.fallback.respond(w, x)
		}
		msg := "jukebox replay: this request is not on the tape; see the divergence report"
		apiError(w, http.StatusBadRequest, msg)
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadRequest, Error: "diverged"}}
	}
	t.served.Add(1)
	return t.serve(w, x, c)
}

// outside answers x without the tape when it is SDK telemetry or goes to
// a host let through live, counting it; ok says it did.
func (t *tapeBackend) outside(w http.ResponseWriter, x *exchange) (answer, bool) {
	a, how, ok := t.world.respond(w, x)
	switch how {
	case outsideLocal:
		t.local.Add(1)
	case outsideLive:
		if t.passed.Add(1) == 1 && t.onLive != nil {
			t.onLive()
		}
	}
	return a, ok
}

// unused are the recorded calls no live request asked for, but those
// replay does not answer from the tape (openWorld.exempt).
func (t *tapeBackend) unused() int {
	n := 0
	for _, c := range t.m.unused() {
		if !t.world.exempt(c) {
			n++
		}
	}
	return n
}

// serve plays one recorded response back: status, headers and body, chunk
// by chunk at the chosen speed, then the recorded failure if there was one:
// a reset is a reset, and where the agent gave up waiting (its timeout),
// replay keeps it waiting until it gives up again.
func (t *tapeBackend) serve(w http.ResponseWriter, x *exchange, c *Call) answer {
	r := c.Response
	if r == nil {
		return answer{resp: tapefmt.LLMResponse{Error: "the recording ended before this call was answered"}, abort: true}
	}
	if r.Status == http.StatusSwitchingProtocols && c.session != nil {
		return t.serveSession(w, x, c)
	}
	body, err := t.m.responseBody(c)
	if err != nil {
		t.unreadable.CompareAndSwap(nil, &err)
		apiError(w, http.StatusBadGateway, "jukebox replay: the tape's answer to this call does not read: "+err.Error())
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadGateway, Error: err.Error()}}
	}
	// A call the breaker refused was answered by jukebox, whole: the same
	// answer again, not the reset of a failed call.
	refused := llmwire.Refused(r)
	if refused && len(body) == 0 {
		var resp tapefmt.LLMResponse
		resp, body = recordedTrip(r)
		r = &resp
	}
	a := answer{resp: *r, body: body, abort: r.Error != "" && !refused}
	if r.Status == 0 {
		t.waitIfAgentGaveUp(x, c, false)
		return a // the upstream never answered: reset the connection
	}
	for k, vs := range r.Header {
		if !hopHeaders[k] {
			w.Header()[k] = vs
		}
	}
	asSent(w, r.Header)
	w.WriteHeader(r.Status)
	t.writeChunks(w, body, r.Chunks)
	if r.Error != "" && !refused {
		// What was recorded reaches the agent before the recorded failure:
		// the reset, or the wait until it gives up.
		_ = http.NewResponseController(w).Flush()
	}
	t.waitIfAgentGaveUp(x, c, len(body) > 0)
	return a
}

// interruptSettle is how long a replay lets its agent read the part of an
// answer its recording's agent had been given when the recording was
// stopped, before it stops the agent there too.
const interruptSettle = 300 * time.Millisecond

// maxReplayWait bounds how long replay plays a recorded wait.
const maxReplayWait = 10 * time.Minute

// waitIfAgentGaveUp holds the call open until the agent closes it, when the
// recording says the agent closed it (a client timeout, or it stopped
// reading a stream it no longer needed). A call the recording's
// interruption cut was closed only because the run was stopped, and the
// agent would wait for ever (up to maxReplayWait, or its client's own
// timeout and retries, which the tape cannot answer): the session is told
// to stop the agent there, as the recording was (SIGINT, or the
// recording's stop signal), interruptSettle after the part of the answer
// it had been delivered (delivered).
func (t *tapeBackend) waitIfAgentGaveUp(x *exchange, c *Call, delivered bool) {
	if !strings.HasPrefix(c.Response.Error, errAgentClosed) {
		return
	}
	if t.interrupted != nil && c.cutByInterrupt {
		if delivered {
			// The part of the answer the recording's agent had when it was
			// stopped reaches this one first: it is given the time to read
			// it (and print it, as it did) before the signal comes.
			select {
			case <-x.req.Context().Done():
			case <-time.After(interruptSettle):
			}
		}
		t.interrupted(c)
	}
	select {
	case <-x.req.Context().Done():
	case <-time.After(maxReplayWait):
	}
}

func (t *tapeBackend) writeChunks(w http.ResponseWriter, body []byte, chunks tapefmt.Chunks) {
	rc := http.NewResponseController(w)
	if t.speed == 0 {
		// As fast as the agent reads: the chunk boundaries cannot be told
		// apart from one write by any client, so one write it is (flushed
		// when the handler returns, or before a recorded wait).
		w.Write(body)
		return
	}
	start, prev := time.Now(), int64(0)
	for _, ch := range chunks {
		if ch.End < prev || ch.End > int64(len(body)) {
			break // a bad chunk table: the rest goes in one piece below
		}
		if t.speed > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(float64(ch.At) / float64(t.speed)))))
		}
		w.Write(body[prev:ch.End])
		_ = rc.Flush()
		prev = ch.End
	}
	if prev < int64(len(body)) {
		w.Write(body[prev:])
	}
}

// NewReplayHandler answers model API calls from the tape in process, with
// no listener and no network: the replayer without a child, for embedding
// and benchmarks. Paths are the proxy's (/openai/v1/..., /anthropic/v1/...).
func NewReplayHandler(t *tapefmt.Tape, rules *reqmatch.Rules, speed Speed) (http.Handler, error) {
	m, err := newMatcher(t, rules, 0) // nothing ends a handler: its bodies are all read
	if err != nil {
		return nil, err
	}
	tb := &tapeBackend{m: m, tape: t, speed: speed, onDiv: func(*Divergence) {}}
	tb.forkCall, tb.overrides = forkOf(t)
	p := &proxy{backend: tb}
	p.control = newControl(p)
	return p, nil
}
