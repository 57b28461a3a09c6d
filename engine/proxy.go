package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// MaxRequestBody is the largest request body jukebox holds (and tapes):
// a request with a larger one is refused, 413, and not sent.
const MaxRequestBody = 64 << 20

// exchange is one model API call passing through the proxy.
type exchange struct {
	provider provider
	path     string // API path as the provider documents it, e.g. /v1/chat/completions
	rest     string // path after the route, appended to the upstream base URL
	query    string
	// scheme and host are the origin the agent asked for when the request
	// came through the forward proxy (empty: a provider base URL pointed
	// at jukebox). plain says it is not a model call: http.* frames.
	scheme, host string
	plain        bool
	req          *http.Request
	body         []byte
	call         uint64
	start        time.Time
	served       *Call       // a fork answers this call from the parent tape
	div          *Divergence // a fork found this call diverging
	conn         uint64      // the connection's ordinal in the run, from 1
	connSeq      uint64      // the request's ordinal on its connection, from 1
	reqSeq       uint64      // the llm.request frame, once written
	respSeq      uint64      // the llm.response frame, once written
	// onChunk, when set, hears each piece of a live answer as it is
	// relayed (EventChunk).
	onChunk func([]byte)
	dec     decoded // the body decoded and parsed, once (decode)
	// scan, when set, masks a streamed answer for the tape as it is
	// relayed (scanFeed); its frame is written from it.
	scan *tapefmt.StreamScan
	// recorded is closed once recordRequest is done with x's request
	// frame; prevRecorded is the previous call's (numberCall).
	prevRecorded, recorded chan struct{}
}

// matchRequest is x as the matcher sees it.
func (x *exchange) matchRequest() MatchRequest {
	return MatchRequest{Method: x.req.Method, Path: x.path, Header: x.req.Header, Body: x.body, Conn: x.conn, ConnSeq: x.connSeq,
		Query: x.query, Scheme: x.scheme, Host: x.host, Plain: x.plain}
}

// connPlace numbers a child's connections in the order they were accepted
// and the requests on each: the place of a request, which replay matches
// parallel identical requests by.
type connPlace struct {
	id       uint64
	requests atomic.Uint64
}

type connKey struct{}

// answer is what a backend sent the child, to be recorded.
type answer struct {
	resp  tapefmt.LLMResponse
	body  []byte
	abort bool // reset the child's connection, as the upstream did
	// live says the request body went upstream, where the HTTP client may
	// hold it past the answer: it is not recycled then.
	live bool
	ws   *wsRecord // a WebSocket session the answer opened (net.conn)
	// tail is the answer's last piece, not yet written to the agent: it
	// goes once the answer's frame is on the tape (relay).
	tail []byte
}

// finish writes the answer's last piece to the agent, its frame written.
func (a answer) finish(w http.ResponseWriter) {
	if len(a.tail) > 0 {
		w.Write(a.tail)
	}
}

// backend answers calls: the live upstream when recording, the tape when
// replaying.
type backend interface {
	respond(w http.ResponseWriter, x *exchange) answer
}

// proxy is the loopback HTTP server the child's SDKs talk to. It records
// every call it answers on the tape, when there is one.
type proxy struct {
	ln      net.Listener
	srv     *http.Server
	backend backend
	tape    *tapefmt.Writer
	calls   atomic.Uint64
	tripped atomic.Uint64 // the calls the circuit breaker refused
	control *control
	guard   *guard // the circuit breaker, nil without limits
	// unknownRate prices models without a price (--unknown-model-rate,
	// dollars a million tokens; 0: none), as the guard does (rate).
	unknownRate float64
	// agent is the agent of the latest agent turn reported through the
	// control API: the agent of calls that carry no X-Jukebox-Agent.
	agent atomic.Pointer[string]

	conns atomic.Uint64 // connections accepted

	// fwd is the forward proxy's state: the run's CA and the server of
	// the CONNECT tunnels (forward.go); httpIDs numbers http.request
	// frames and netIDs net.conn frames.
	fwd     *forwarder
	httpIDs atomic.Uint64
	netIDs  atomic.Uint64

	// liveFailed counts live calls that never reached their upstream (a
	// refused connection, an unknown host, a timeout); liveErr is the
	// first one's error.
	liveFailed atomic.Uint64
	liveErr    atomic.Pointer[string]

	// tooLarge counts the requests refused for a body over
	// MaxRequestBody (never sent, not on the tape); tooLargeTo is the
	// first one's method and URL.
	tooLarge   atomic.Uint64
	tooLargeTo atomic.Pointer[string]

	// writeErr is the first frame the proxy failed to write to the tape,
	// with the reason: the run fails with it (session.finish).
	writeErr atomic.Pointer[error]

	// beforeCall, when set, runs as each model call is received, before
	// its request frame: the booth's step boundary (startSteps).
	beforeCall atomic.Pointer[func()]

	mu sync.Mutex
	// lastRecorded is closed once the latest numbered call's request
	// frame is written (or failed): the next call's waits for it.
	lastRecorded chan struct{}
	steps        bool            // a call has been made: the next one closes a step
	stepDue      bool            // an SDK transaction ended with a call in flight: close the step once none is
	inflight     int             // calls recorded but not yet answered
	unpriced     map[string]bool // models of recorded calls that used tokens at no known price
	onEvent      func(Event)

	serving sync.Once
}

// NewProxy listens on 127.0.0.1 on a free port. It answers nothing until
// serve: whatever the handlers read (the guard, the control API's state)
// is set before, so that no request sees it half made.
func newProxy(b backend, tape *tapefmt.Writer, onEvent func(Event)) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("engine: proxy listen: %w", err)
	}
	p := &proxy{ln: ln, backend: b, tape: tape, onEvent: onEvent}
	if p.fwd, err = newForwarder(p); err != nil {
		ln.Close()
		return nil, err
	}
	p.control = newControl(p)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, &connPlace{id: p.conns.Add(1)})
		}}
	return p, nil
}

// serve starts answering, once.
func (p *proxy) serve() {
	p.serving.Do(func() { go p.srv.Serve(p.ln) })
}

// url is the proxy's root URL.
func (p *proxy) url() string { return "http://" + p.addr() }

// addr is the proxy's 127.0.0.1:PORT.
func (p *proxy) addr() string {
	if p.ln == nil {
		return "" // a handler of its own (NewReplayHandler)
	}
	return p.ln.Addr().String()
}

// baseURL is the base URL a provider's SDK should use.
func (p *proxy) baseURL(pr provider) string { return p.url() + pr.route() }

// Close stops the proxy, waiting up to a second for calls in flight.
func (p *proxy) Close() error {
	p.serving.Do(func() { p.ln.Close() }) // never served: Shutdown does not know ln
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p.fwd.close(ctx)
	if err := p.srv.Shutdown(ctx); err != nil {
		return p.srv.Close()
	}
	return nil
}

// ServeHTTP routes a call to its provider, records it and lets the backend answer.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.forward(w, r) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/_jukebox/") {
		p.control.ServeHTTP(w, r)
		return
	}
	x, err := p.route(r)
	if err != nil {
		apiError(w, http.StatusNotFound, err.Error())
		return
	}
	p.serveCall(w, r, x)
}

// serveCall records a model call and lets the backend answer it.
func (p *proxy) serveCall(w http.ResponseWriter, r *http.Request, x *exchange) {
	buf, ok := p.readExchange(w, r, x)
	if !ok {
		return
	}
	p.numberCall(x)
	if pr, ok := p.backend.(preparer); ok {
		pr.prepare(x)
	}
	if isLive(p.backend) && p.tape != nil {
		x.scan = p.tape.NewStreamScan() // its answer is relayed: masked as it comes
	}
	if p.overlaps() {
		p.serveOverlapped(w, x)
		return
	}
	if err := p.recordRequest(x); err != nil {
		apiError(w, http.StatusInternalServerError, "jukebox: "+err.Error())
		return
	}
	live := x.served == nil && x.div == nil // not answered from a tape
	if p.guard != nil && live {
		if a, refused := p.guard.before(w, x, x.reqSeq, p.agentOf(x)); refused {
			p.tripped.Add(1)
			p.recordResponse(x, a)
			putBody(buf)
			return
		}
	}
	if p.onEvent != nil && live {
		x.onChunk = func(b []byte) { p.emit(Event{Kind: EventChunk, Call: x.call, Data: bytes.Clone(b)}) }
	}
	a := p.backend.respond(w, x)
	if !a.live && llmwire.Refused(&a.resp) {
		p.control.replayedTrip(&a.resp) // the breaker tripped here when recorded
	}
	p.liveFailure(a)
	usage := p.recordResponse(x, a)
	a.finish(w)
	if p.guard != nil && a.live {
		p.guard.after(x, a, x.respSeq, p.agentOf(x), usage)
	}
	if !a.live {
		putBody(buf)
	}
	if a.abort {
		panic(http.ErrAbortHandler) // resets the child's connection
	}
}

// numberCall gives x the next call number and its place in the order of
// request frames: recordRequest writes x's after the previous call's.
func (p *proxy) numberCall(x *exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	x.call = p.calls.Add(1) - 1
	x.prevRecorded, x.recorded = p.lastRecorded, make(chan struct{})
	p.lastRecorded = x.recorded
}

// overlaps says whether a model call's request frame is written while
// the call goes to its upstream (serveOverlapped): when recording live,
// with a tape and no circuit breaker, which must see the request, and
// refuse it, before it goes.
func (p *proxy) overlaps() bool {
	// Once a frame could not be written (any frame: the agent's output,
	// a control exchange) the run has failed: calls are no longer sent
	// before their request is on the tape (the sequential path refuses
	// them, 500, unsent).
	return isLive(p.backend) && p.tape != nil && p.guard == nil && p.tape.Err() == nil
}

// isLive says whether b is the live upstream (record), which relays
// every answer as it arrives.
func isLive(b backend) bool {
	_, ok := b.(*live)
	return ok
}

// serveOverlapped answers a live call while its request frame is being
// written, on another core: storing the request (masked, hashed,
// delta-encoded, compressed) and parsing it take about as long as a
// loopback upstream takes to answer, and the agent waited for both in
// turn. The answer's frame is written once the request's is (so the
// tape has them in order), and the answer's last bytes reach the agent
// after that, as on the sequential path. A request frame that cannot be
// written fails the run (writeErr) with the call made: it went out before
// the failure was known.
func (p *proxy) serveOverlapped(w http.ResponseWriter, x *exchange) {
	recorded := make(chan error, 1)
	go func() { recorded <- p.recordRequest(x) }()
	var once sync.Once
	var reqErr error
	wait := func() error {
		once.Do(func() { reqErr = <-recorded })
		return reqErr
	}
	if p.onEvent != nil {
		// A call's chunks follow its request, for whoever hears them.
		x.onChunk = func(b []byte) {
			if wait() == nil {
				p.emit(Event{Kind: EventChunk, Call: x.call, Data: bytes.Clone(b)})
			}
		}
	}
	a := p.backend.respond(w, x)
	if err := wait(); err != nil {
		p.wrote("llm.request of call "+fmt.Sprint(x.call), err)
		a.finish(w)
		if a.abort {
			panic(http.ErrAbortHandler)
		}
		return
	}
	p.liveFailure(a)
	p.recordResponse(x, a)
	a.finish(w)
	if a.abort {
		panic(http.ErrAbortHandler) // resets the child's connection
	}
}

// liveFailure counts a live call that had no answer at all (not one that
// broke off after its status: that is on the tape as it came).
func (p *proxy) liveFailure(a answer) {
	if a.live && a.resp.Status == 0 && a.resp.Error != "" && !strings.HasPrefix(a.resp.Error, errAgentClosed) {
		if p.liveFailed.Add(1) == 1 {
			p.liveErr.Store(&a.resp.Error)
		}
	}
}

// readExchange reads r's body into x and places x on its connection,
// answering 413 when the body is over MaxRequestBody (counted) and 400
// when it does not read whole (false then).
func (p *proxy) readExchange(w http.ResponseWriter, r *http.Request, x *exchange) (*[]byte, bool) {
	var buf *[]byte
	var err error
	if r.ContentLength <= MaxRequestBody { // a longer one declared is refused unread
		buf, err = readBody(w, r)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case r.ContentLength > MaxRequestBody || errors.As(err, &tooLarge):
		apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("jukebox: the request body is over the %d MiB jukebox holds of a request: "+
			"the request was not sent (docs/recording.md: Limits)", MaxRequestBody>>20))
		if p.tooLarge.Add(1) == 1 {
			to := r.Method + " " + x.scheme + "://" + x.host + x.path
			p.tooLargeTo.Store(&to)
		}
		return nil, false
	case err != nil:
		apiError(w, http.StatusBadRequest, "jukebox: the request body does not read whole: "+err.Error())
		return nil, false
	}
	x.body = *buf
	if c, ok := r.Context().Value(connKey{}).(*connPlace); ok {
		x.conn, x.connSeq = c.id, c.requests.Add(1)
	}
	x.start = time.Now()
	return buf, true
}

// bodies recycles request body buffers: replay reads every request in full
// and keeps none of them. A small free list rather than a sync.Pool, which
// every garbage collection empties; buffers over maxRecycled are let go.
var bodies = make(chan *[]byte, 16)

const maxRecycled = 1 << 20

func getBody() *[]byte {
	select {
	case b := <-bodies:
		return b
	default:
		return new([]byte)
	}
}

func putBody(b *[]byte) {
	if cap(*b) > maxRecycled {
		return
	}
	select {
	case bodies <- b:
	default:
	}
}

// readBody reads a request body of up to MaxRequestBody bytes into a
// recycled buffer when its length is known. The caller puts the buffer back.
func readBody(w http.ResponseWriter, r *http.Request) (*[]byte, error) {
	buf := getBody()
	if n := r.ContentLength; n >= 0 && n <= MaxRequestBody {
		// A known length within the limit: exactly that many bytes are read.
		if int64(cap(*buf)) < n {
			*buf = make([]byte, n)
		}
		*buf = (*buf)[:n]
		_, err := io.ReadFull(r.Body, *buf)
		return buf, err
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	*buf = b
	return buf, err
}

func (p *proxy) route(r *http.Request) (*exchange, error) {
	for _, pr := range providers {
		if rest, ok := strings.CutPrefix(r.URL.Path, pr.route()); ok && (rest == "" || rest[0] == '/') {
			return &exchange{provider: pr, path: pr.APIPrefix + rest, rest: rest, query: r.URL.RawQuery, req: r}, nil
		}
	}
	return nil, fmt.Errorf("jukebox: no provider at %s (routes: /openai/v1/..., /anthropic/v1/...)", r.URL.Path)
}

// recordRequest writes the request frame, closing the previous step first:
// an agent step runs from one model call to the next. A call made while
// another is in flight belongs to the same step, so a parallel fan-out is
// one step.
func (p *proxy) recordRequest(x *exchange) (err error) {
	if x.recorded != nil {
		// Request frames go in call order: written beside the upstream
		// call (serveOverlapped), call 0's could land after call 1's when
		// the agent sent call 1 on a new connection as soon as it had
		// read answer 0's last event.
		defer close(x.recorded)
	}
	if x.prevRecorded != nil {
		<-x.prevRecorded
	}
	if p.tape == nil {
		return nil
	}
	p.mu.Lock()
	closeStep := p.steps && p.inflight == 0
	p.steps = true
	p.inflight++
	if closeStep {
		p.stepDue = false // closed here
	}
	p.mu.Unlock()
	defer func() {
		if err != nil {
			p.answered() // no response will be recorded
		}
	}()
	if closeStep {
		if _, err := p.tape.Commit(); err != nil {
			return err
		}
	}
	if f := p.beforeCall.Load(); f != nil {
		(*f)()
	}
	h, err := p.putRequestBody(x)
	if err != nil {
		return err
	}
	ri := x.decode().info
	seq, err := p.tape.Append(0, tapefmt.LLMRequest{Call: x.call, Provider: x.provider.Name, Method: x.req.Method,
		Path: x.path, Query: x.query, Header: x.req.Header, Body: h, Size: int64(len(x.body)), Model: ri.Model, Stream: ri.Stream,
		Conn: x.conn, ConnSeq: x.connSeq, Scheme: x.scheme, Host: x.host})
	x.reqSeq = seq
	p.emit(Event{Kind: EventRequest, Seq: seq, Call: x.call, CallUsage: llmwire.CallUsage{Model: ri.Model}})
	return err
}

// parseApart is the size from which a request body is parsed (for its
// model, stream flag and text) on another core while it is stored: both
// read the whole body, and the agent waits for both. For a conversation
// of tens of kilobytes that is a fifth of what recording adds to a call.
const parseApart = 16 << 10

// putRequestBody stores x's body on the tape and has it decoded and
// parsed (x.decode) by the time it returns.
func (p *proxy) putRequestBody(x *exchange) (tapefmt.Hash, error) {
	lane := x.provider.Name + " " + x.path + " request"
	if len(x.body) < parseApart {
		x.decode()
		return p.tape.PutBlob(lane, x.body)
	}
	parsed := make(chan struct{})
	go func() {
		defer close(parsed)
		x.decode() // reads x.body, as PutBlob does; neither writes it
	}()
	h, err := p.tape.PutBlob(lane, x.body)
	<-parsed
	return h, err
}

// endStep closes the step at a point of the run that is not a model call
// (an SDK transaction's end), when no call is in flight: a run that works
// through the control API alone never closed one, and a tape cut by a
// crash, whose readers keep whole steps, lost everything after run.start
// (a commit in the workspace, on no tape). The next call then opens a new
// step without closing one again.
func (p *proxy) endStep() {
	if p.tape == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight > 0 {
		// Closed when the calls in flight are answered (answered): a
		// stream is in flight until its body's end, which can come well
		// after the agent read its last event and committed.
		p.stepDue = true
		return
	}
	p.closeStepLocked()
}

// closeStepLocked writes a step boundary, p.mu held.
func (p *proxy) closeStepLocked() {
	p.stepDue = false
	if _, err := p.tape.Commit(); err != nil {
		p.wrote("step", err)
		return
	}
	p.steps = false
}

// answered ends a call's time in flight, and closes the step an SDK
// transaction's end left due once no call is in flight.
func (p *proxy) answered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inflight--
	if p.inflight == 0 && p.stepDue && p.tape != nil {
		p.closeStepLocked()
	}
}

// recordResponse writes the answer's frame and returns its usage as
// counted for it (nil without a tape), for the breaker to count once.
func (p *proxy) recordResponse(x *exchange, a answer) *llmwire.CallUsage {
	a.resp.Call = x.call
	if p.tape == nil {
		return nil
	}
	defer p.answered()
	if len(a.body) > 0 {
		h, chunks, err := p.tape.PutStreamScanned(x.provider.Name+" "+x.path+" response", a.body, a.resp.Chunks, x.scan)
		a.resp.Chunks = chunks
		if err != nil {
			a.resp.Error = joinProblems(a.resp.Error, err.Error())
			p.lostBody(fmt.Sprint("call ", x.call), len(a.body), err)
		}
		a.resp.Body = h
	}
	body := func(tapefmt.Hash) ([]byte, error) { return a.body, nil }
	c := llmwire.ResponseUsage(&a.resp, body, x.llmCall)
	if a.live && c.Usage != (tapefmt.Usage{}) {
		a.resp.Rate = p.rate(c.Model) // the price in force, on the tape
		c.Price(a.resp.Rate)
	}
	seq, err := p.tape.Append(0, a.resp)
	p.wrote("llm.response of call "+fmt.Sprint(x.call), err)
	x.respSeq = seq
	if p.control != nil && p.control.mcp.active.Load() {
		p.control.mcp.asked(seq, &a.resp, a.body)
	}
	if c.Unpriced() {
		p.mu.Lock()
		if p.unpriced == nil {
			p.unpriced = map[string]bool{}
		}
		p.unpriced[cmp.Or(c.Model, "?")] = true
		p.mu.Unlock()
	}
	p.emit(Event{Kind: EventResponse, Seq: seq, Call: x.call, CallUsage: c})
	return &c
}

// lostBody fails the run's result for an answer's body the tape could
// not take (over MaxBlobSize): the agent had it, a replay cannot give it.
// It was noted on its frame alone, the recording called a success, and
// its replay answered 200 with no body.
func (p *proxy) lostBody(what string, size int, err error) {
	p.wrote(fmt.Sprintf("the answer body of %s (%d bytes; a replay could not give it)", what, size), err)
}

// joinProblems joins a frame's error notes: "a; b", or either alone.
func joinProblems(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// wrote keeps the first failed write of a frame, naming the frame.
func (p *proxy) wrote(frame string, err error) {
	if err != nil {
		e := fmt.Errorf("writing %s: %w", frame, err)
		p.writeErr.CompareAndSwap(nil, &e)
	}
}

// writeError is the first frame the proxy failed to write, or nil.
func (p *proxy) writeError() error {
	if e := p.writeErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (p *proxy) emit(e Event) {
	if p.onEvent != nil {
		p.onEvent(e)
	}
}

// asSent keeps Go's server from adding to an answer with header h (the
// upstream's, or the tape's) a Date or a sniffed Content-Type the
// upstream did not send: a Date taken now made each replay's answer
// differ from the recording's.
func asSent(w http.ResponseWriter, h http.Header) {
	for _, k := range []string{"Date", "Content-Type"} {
		if _, ok := h[k]; !ok {
			w.Header()[k] = nil
		}
	}
}

// apiError answers with an error object both SDK families understand.
func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error",
		"error": map[string]string{"type": "jukebox_error", "message": msg}})
}

// agentOf names the agent of a call: its X-Jukebox-Agent header, else the
// agent of the latest turn reported through the control API, else "".
func (p *proxy) agentOf(x *exchange) string {
	return llmwire.AgentOf(x.req.Header, p.lastAgent())
}

// lastAgent is the agent of the latest turn reported through the control
// API, or "".
func (p *proxy) lastAgent() string {
	if a := p.agent.Load(); a != nil {
		return *a
	}
	return ""
}
