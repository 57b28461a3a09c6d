package engine

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Call is one recorded request and its response.
type Call struct {
	Request  *tapefmt.LLMRequest
	Response *tapefmt.LLMResponse // nil when the run ended before it came
	Seq      uint64               // frame of the request
	RespSeq  uint64
	// body is the request body as recorded, read ahead (readBodies) and
	// let go once the call is used: a request sent as recorded is compared
	// with it, or, when it is not held, by address (sameBytes).
	body     []byte
	bodyRead bool
	respBody []byte // the response body, read on first need (Matcher.responseBody)
	respRead bool   // respBody was read, or respErr says why it could not be
	respErr  error
	// canonKey is the hash of the canonical body, made on first need
	// (Matcher.canonKeyOf): the body and its canonical form are made again
	// when needed, not kept, for a long run's requests, each resending
	// the conversation, are most of what it sent.
	canonKey  tapefmt.Hash
	canonMade bool
	query     *string // canonical query, made on first need
	used      bool
	// Plain says the call is an http.request/http.response pair (not a
	// model call), held in the model call's types: their fields are the
	// same.
	Plain bool
	// session is the WebSocket session the call upgraded to, if it did.
	session *tapefmt.NetConn
	// cutByInterrupt says the call was in flight when the recording was
	// interrupted (markInterrupted).
	cutByInterrupt bool
}

// MatchRequest is a live request as matching sees it.
type MatchRequest struct {
	Method, Path string
	Header       http.Header // Content-Type and Content-Encoding are read
	Body         []byte
	// Conn and ConnSeq place the request on the child's connections (the
	// connection's ordinal in the run from 1, the request's on it from 1);
	// 0 when unknown. Among identical bodies, the recorded call at the same
	// place is served first, so parallel identical calls keep their answers.
	Conn, ConnSeq uint64
	// Query is the raw query string, compared parameter by parameter.
	Query string
	// Scheme and Host are the origin the agent asked for (the forward
	// proxy), "" for a model call to a base URL pointed at jukebox. Plain
	// says it is not a model call: it matches http.request frames.
	Scheme, Host string
	Plain        bool
}

// canonicalBody is a body's canonical form under the rules: decoded by its
// Content-Encoding, then structured by its Content-Type.
func canonicalBody(r *reqmatch.Rules, h http.Header, body []byte) []byte {
	return r.Canonical(h.Get("Content-Type"), llmwire.DecodeBody(h, body).Text)
}

// samePlace reports whether the recorded call was made at the live
// request's place on its connections.
func (c *Call) samePlace(r MatchRequest) bool {
	return r.Conn != 0 && c.Request.Conn == r.Conn && c.Request.ConnSeq == r.ConnSeq
}

// endpoint is how calls are grouped for matching: method and path, and
// for plain HTTP the origin too (a model call's host is compared apart,
// sameHead, so that calls recorded through a base URL still match).
func (c *Call) endpoint() string {
	return endpointKey(c.Request.Method, c.Request.Scheme, c.Request.Host, c.Request.Path, c.Plain)
}

// Matcher hands out recorded calls to live requests: per endpoint, an
// unused call whose canonical body equals the request's (see
// reqmatch.Rules): the one recorded at the same place on the child's
// connections if there is one, else the first, so identical requests
// replay in the order they were recorded. It is safe for concurrent use.
type Matcher struct {
	mu    sync.Mutex
	rules *reqmatch.Rules
	calls map[string][]*Call
	tape  *tapefmt.Tape
	mask  *redact.Masker // the tape's own (run.start redact): live bodies are masked alike
	// recorded are the ignore paths the tape was recorded with: rules of
	// the recording, not typos of this run's, so checkIgnore passes them.
	recorded []string
	// repeat serves a recorded answer again to a request asked more often
	// than recorded (replay --repeat); repeats counts how often it did.
	repeat  bool
	repeats int
	// bodiesRead is closed once readBodies read every body it reads.
	bodiesRead chan struct{}
	// held is the bytes of request bodies read ahead and not let go yet,
	// at most about window (0: no bound): room is signalled when some are
	// let go, or when stopped says the replay ended.
	held, window int
	room         *sync.Cond
	stopped      bool
}

// bodyWindow bounds the request bodies read ahead of the agent: a long
// run's requests, each resending the conversation, are most of what it
// sent, many times the tape's size (a 6 MB tape of 800 steps, 200 MB).
const bodyWindow = 32 << 20

// NewMatcher indexes every LLM call on the tape; rules must be compiled
// (nil is reqmatch.Default()).
func NewMatcher(t *tapefmt.Tape, rules *reqmatch.Rules) (*Matcher, error) {
	return newMatcher(t, rules, bodyWindow)
}

// newMatcher is NewMatcher reading window bytes of request bodies ahead
// at most (0: all of them, for an owner that never stops it).
func newMatcher(t *tapefmt.Tape, rules *reqmatch.Rules, window int) (*Matcher, error) {
	if rules == nil {
		rules = reqmatch.Default()
	}
	t.Preload(64 << 20)
	m := &Matcher{rules: rules, calls: map[string][]*Call{}, tape: t, bodiesRead: make(chan struct{}), window: window}
	m.room = sync.NewCond(&m.mu)
	if start, err := FirstRunStart(t); err == nil {
		if m.mask, err = redact.NewMasker(start.Redact); err != nil {
			return nil, err
		}
	}
	byID, plainByID := map[uint64]*Call{}, map[uint64]*Call{}
	var sessions []*tapefmt.NetConn
	for f, err := range t.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindHTTPRequest, tapefmt.KindHTTPResponse, tapefmt.KindNetConn) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			m.addCall(byID, p.Call, &Call{Request: p, Seq: f.Seq})
		case *tapefmt.HTTPRequest:
			m.addCall(plainByID, p.ID, plainCall(p, f.Seq))
		case *tapefmt.LLMResponse:
			m.answer(byID[p.Call], p, f.Seq)
		case *tapefmt.HTTPResponse:
			m.answer(plainByID[p.ID], plainResponse(p), f.Seq)
		case *tapefmt.NetConn:
			sessions = append(sessions, p)
		}
	}
	linkSessions(sessions, plainByID, byID)
	markInterrupted(t, m)
	go m.readBodies()
	return m, nil
}

// markInterrupted marks the calls a recording's interruption cut: when the
// run ended interrupted (Ctrl-C), the calls whose answer says the agent
// closed them and is on the tape after its last request were in flight
// when it was stopped, not given up on by the agent.
func markInterrupted(t *tapefmt.Tape, m *Matcher) {
	end, ok := recordedEnd(t)
	if !ok || stopSignal(end) == nil {
		return
	}
	last := uint64(0)
	for _, calls := range m.calls {
		for _, c := range calls {
			last = max(last, c.Seq)
		}
	}
	for _, calls := range m.calls {
		for _, c := range calls {
			if c.Response != nil && c.RespSeq > last && strings.HasPrefix(c.Response.Error, errAgentClosed) {
				c.cutByInterrupt = true
			}
		}
	}
}

// addCall indexes a recorded request. Its body is not read here: it is
// read in the background (readBodies), or when a comparison needs it
// first (recordedBody); a live body sent as recorded matches by address.
func (m *Matcher) addCall(byID map[uint64]*Call, id uint64, c *Call) {
	byID[id] = c
	m.calls[c.endpoint()] = append(m.calls[c.endpoint()], c)
}

// recordedBody is c's request body as recorded: the one read ahead, or
// read from the tape (whose cache of blobs keeps the ones read last);
// m.mu is held.
func (m *Matcher) recordedBody(c *Call) ([]byte, error) {
	if c.bodyRead {
		return c.body, nil
	}
	body, err := m.body(c.Request.Body)
	if err != nil {
		return nil, fmt.Errorf("request body of frame %d: %w", c.Seq, err)
	}
	return body, nil
}

// canonical is c's canonical body; a recorded body that cannot be read
// has the error as its form: no live request equals it, and a divergence
// shows it as the recorded side.
func (m *Matcher) canonical(c *Call) []byte {
	body, err := m.recordedBody(c)
	if err != nil {
		return []byte("(unreadable: " + err.Error() + ")")
	}
	return canonicalBody(m.rules, c.Request.Header, body)
}

// canonKeyOf is the hash of c's canonical body, made on first need; m.mu
// is held.
func (m *Matcher) canonKeyOf(c *Call) tapefmt.Hash {
	if !c.canonMade {
		c.canonKey, c.canonMade = tapefmt.HashOf(m.canonical(c)), true
	}
	return c.canonKey
}

// sameBytes says whether a call was recorded with body's very bytes: they
// are compared with its recorded body while that is held (readBodies),
// else with its address, the hash of its content (hashed once, when a
// call needs it); m.mu is held.
func sameBytes(body []byte) func(*Call) bool {
	var h tapefmt.Hash
	hashed := false
	return func(c *Call) bool {
		switch {
		case c.bodyRead:
			return bytes.Equal(c.body, body)
		case c.Request.Body.IsZero():
			return len(body) == 0
		case !hashed:
			h, hashed = tapefmt.HashOf(body), true
		}
		return c.Request.Body == h
	}
}

// readBodies reads the recorded request and response bodies in recorded
// order, in the background while the agent starts, so that a replay does
// not wait for them before it starts the agent; a request that comes
// before its recorded body was read matches by address (sameBytes), and
// an answer needed before it was read is read then (responseBody). It
// holds about m.window bytes of request bodies at most, waiting for
// the calls to be used (or the replay to end, stop) to read on.
func (m *Matcher) readBodies() {
	defer close(m.bodiesRead)
	m.mu.Lock()
	var calls []*Call
	for _, cs := range m.calls {
		calls = append(calls, cs...)
	}
	m.mu.Unlock()
	slices.SortFunc(calls, func(a, b *Call) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, c := range calls {
		m.mu.Lock()
		for m.window > 0 && m.held >= m.window && !m.stopped {
			m.room.Wait()
		}
		stopped, ahead, r := m.stopped, !c.used, c.Response
		m.mu.Unlock()
		if stopped {
			return
		}
		if ahead {
			body, err := m.body(c.Request.Body) // outside m.mu: Match goes on meanwhile
			m.mu.Lock()
			if err == nil && !c.used && !c.bodyRead {
				c.body, c.bodyRead = body, true
				m.held += len(body)
			}
			m.mu.Unlock()
		}
		if r == nil {
			continue
		}
		body, err := m.body(r.Body)
		m.mu.Lock()
		if !c.respRead {
			c.setResponseBody(body, err)
		}
		m.mu.Unlock()
	}
}

// letGo lets c's request body read ahead go, c used; m.mu is held.
func (m *Matcher) letGo(c *Call) {
	if c.bodyRead {
		m.held -= len(c.body)
		c.body, c.bodyRead = nil, false
		m.room.Broadcast()
	}
}

// stop ends the reading ahead: the replay ended.
func (m *Matcher) stop() {
	m.mu.Lock()
	m.stopped = true
	m.room.Broadcast()
	m.mu.Unlock()
}

// responseBody is c's recorded answer's body, read from the tape on first
// need (readBodies reads them all in the background); the error names the
// frame.
func (m *Matcher) responseBody(c *Call) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.responseBodyLocked(c)
}

// responseBodyLocked is responseBody with m.mu held.
func (m *Matcher) responseBodyLocked(c *Call) ([]byte, error) {
	if !c.respRead && c.Response != nil {
		c.setResponseBody(m.body(c.Response.Body))
	}
	return c.respBody, c.respErr
}

func (c *Call) setResponseBody(body []byte, err error) {
	c.respBody, c.respErr, c.respRead = body, err, true
	if err != nil {
		c.respErr = fmt.Errorf("response body of frame %d: %w", c.RespSeq, err)
	}
}

// recordedBodies are the recorded request bodies, decoded, one at a time,
// for checking rules against them.
func (m *Matcher) recordedBodies() iter.Seq2[reqmatch.Body, error] {
	return func(yield func(reqmatch.Body, error) bool) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, cs := range m.calls {
			for _, c := range cs {
				body, err := m.recordedBody(c)
				if err != nil {
					yield(reqmatch.Body{}, err)
					return
				}
				if !yield(reqmatch.Body{ContentType: c.Request.Header.Get("Content-Type"),
					Data: llmwire.DecodeBody(c.Request.Header, body).Text}, nil) {
					return
				}
			}
		}
	}
}

// answer gives a recorded call (nil: none) its response, frame seq; its
// body is read later (readBodies, responseBody).
func (m *Matcher) answer(c *Call, r *tapefmt.LLMResponse, seq uint64) {
	if c != nil {
		c.Response, c.RespSeq = r, seq
	}
}

// call is the recorded call whose llm.request is frame seq, or nil.
func (m *Matcher) call(seq uint64) *Call {
	for _, calls := range m.calls {
		for _, c := range calls {
			if c.Seq == seq {
				return c
			}
		}
	}
	return nil
}

func (m *Matcher) body(h tapefmt.Hash) ([]byte, error) { return blobOf(m.tape, h) }

// Match finds the recorded call for a live request, or describes how the
// request diverges from what the tape expected next. A body sent byte for
// byte as recorded matches without being parsed; only when none does are
// canonical forms compared. The query, the origin and (for plain HTTP) the
// ComparedHeaders must match too.
//
// A body sent byte for byte as a recorded one matches before anything
// else (the usual replay: the same agent sends the same bytes), at no cost
// of masking. Otherwise the body is masked as the tape's writer masks
// bodies; when no recorded call takes it so, it is tried again masked as before fixed-length masks
// and the credential rules in bodies (a tape an earlier release wrote,
// with --redact or without).
func (m *Matcher) Match(r MatchRequest) (*Call, *Divergence) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The query as the tape keeps it: without the parameters named as
	// credentials, the values masked; a tape an earlier release wrote kept
	// the values as they were.
	plain := redact.Query(r.Query)
	r.Query = m.mask.MaskQuery(plain)
	c, d := m.matchMasked(r)
	if d != nil && r.Query != plain {
		r.Query = plain
		if c2, d2 := m.matchMasked(r); d2 == nil {
			c, d = c2, nil
		}
	}
	if c != nil {
		m.letGo(c)
	}
	return c, d
}

// matchMasked is Match with the query as the tape keeps it; m.mu is held.
func (m *Matcher) matchMasked(r MatchRequest) (*Call, *Divergence) {
	sent := r.Body
	if c := m.exact(r); c != nil {
		return c, nil
	}
	r.Body = m.mask.Mask(sent)
	c, d := m.match(r)
	if d == nil {
		return c, nil
	}
	if before := m.mask.MaskAsBefore(sent); !bytes.Equal(before, r.Body) {
		r.Body = before
		if c, d2 := m.match(r); d2 == nil {
			return c, nil
		}
	}
	return nil, d
}

// exact is the call recorded with r's very bytes, or nil; m.mu is held.
// What the tape's writer masked differs from the bytes sent unless it was
// masked already (or a tape kept it unmasked): masking the body first could
// only find the same call.
func (m *Matcher) exact(r MatchRequest) *Call {
	calls := m.calls[endpointKey(r.Method, r.Scheme, r.Host, r.Path, r.Plain)]
	if len(calls) == 0 {
		return nil
	}
	query := m.rules.Query(r.Query)
	head := m.head(r.Header, r.Plain)
	same := sameBytes(r.Body)
	return pick(calls, r, func(c *Call) bool { return same(c) && m.sameHead(c, r, query, head) })
}

// match is Match for a body masked one way; m.mu is held.
func (m *Matcher) match(r MatchRequest) (*Call, *Divergence) {
	if c := m.exact(r); c != nil {
		return c, nil
	}
	calls := m.calls[endpointKey(r.Method, r.Scheme, r.Host, r.Path, r.Plain)]
	query := m.rules.Query(r.Query)
	head := m.head(r.Header, r.Plain)
	same := func(c *Call) bool { return m.sameHead(c, r, query, head) }
	canon := canonicalBody(m.rules, r.Header, r.Body)
	key := tapefmt.HashOf(canon)
	var next *Call
	for _, c := range calls {
		if !c.used && next == nil {
			next = c
		}
	}
	if c := pick(calls, r, func(c *Call) bool { return m.canonKeyOf(c) == key && same(c) }); c != nil {
		return c, nil
	}
	if c := m.again(calls, r.Body, key, same); c != nil {
		return c, nil
	}
	return nil, m.divergence(r, next, shape{query: query, head: head, canon: canon})
}

// again is, under --repeat, the last used call equal to the request (its
// bytes or its canonical form): its answer is served once more.
func (m *Matcher) again(calls []*Call, body []byte, key tapefmt.Hash, same func(*Call) bool) *Call {
	if !m.repeat {
		return nil
	}
	sameBody := sameBytes(body)
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.used && same(c) && (sameBody(c) || m.canonKeyOf(c) == key) {
			m.repeats++
			return c
		}
	}
	return nil
}

// Repeats is how often a recorded answer was served again (--repeat).
func (m *Matcher) Repeats() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.repeats
}

// pick marks used and returns the unused call that equal accepts, the one
// at r's place first; nil when none does.
func pick(calls []*Call, r MatchRequest, equal func(*Call) bool) *Call {
	var first *Call
	for _, c := range calls {
		if c.used || !equal(c) {
			continue
		}
		if c.samePlace(r) {
			first = c
			break
		}
		if first == nil {
			first = c
		}
	}
	if first != nil {
		first.used = true
	}
	return first
}

// unused returns the recorded calls no live request asked for, in order.
func (m *Matcher) unused() []*Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Call
	for _, cs := range m.calls {
		for _, c := range cs {
			if !c.used {
				out = append(out, c)
			}
		}
	}
	return out
}

// Divergence is a live request that matches nothing on the tape.
type Divergence struct {
	// Endpoint is the request's method and URL: its path, after the
	// origin the agent asked for when it named one ("GET
	// https://api.example.com/search").
	Endpoint string `json:"endpoint"`
	Frame    int64  `json:"expected_frame"` // the request frame expected next, -1 when none was
	// Step is the step of the run that frame is in, counted from 1 as the
	// turntable and bisect count them (step.commit frames end each); 0
	// when no frame was expected.
	Step int `json:"step,omitempty"`
	// Path is the first field where the live request differs from the one
	// expected next ("messages.3.content"; "(body)" for the whole body;
	// "query:NAME" for a query parameter, "header:NAME" for a header).
	Path     string `json:"path,omitempty"`
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual"`
	Diff     string `json:"diff"`
	// Nearest is the recorded request most like this one, when nothing
	// was expected at its endpoint: its method, URL and frame.
	Nearest string `json:"nearest,omitempty"`
	// Cut: the tape holds no end of its recorded run (the recording was
	// killed or crashed and the tape cut back to its last whole step) and
	// the request came after its last call; TapeEnds is its last frame.
	Cut      bool  `json:"tape_cut,omitempty"`
	TapeEnds int64 `json:"tape_ends_at_frame,omitempty"`
	// Recorded is how many calls the recording made at the endpoint,
	// when nothing was expected there: each answered already. Again says
	// that one of them was this very request (its canonical form): asked
	// more often than recorded, which --repeat answers.
	Recorded int  `json:"recorded_calls,omitempty"`
	Again    bool `json:"asked_again,omitempty"`
	// Env names the environment variables the differing values came
	// from (envSuspects): set otherwise in this run than in the recording.
	Env []string `json:"environment,omitempty"`
	// Ended, for a fork, says how the agent ended ("exit 0") before it
	// asked for the call at the fork frame (Frame): nothing was forked.
	Ended string `json:"agent_ended_before_fork,omitempty"`
}

// Where says where the run diverged, for a one-line summary: "at frame
// 5", or, when no recorded call was expected, why none was.
func (d *Divergence) Where() string {
	switch {
	case d.Frame >= 0:
		return fmt.Sprintf("at frame %d%s", d.Frame, d.stepText())
	case d.Cut:
		return fmt.Sprintf("past the end of the cut tape (it ends at frame %d)", d.TapeEnds)
	}
	return "at " + d.Endpoint + ", which the recording has no more calls to"
}

// Error describes the divergence in one paragraph.
func (d *Divergence) Error() string {
	if d.Ended != "" {
		return fmt.Sprintf("fork diverged at frame %d%s: the agent ended (%s) before it asked for the call at the fork frame (%s): "+
			"nothing was forked, no call went live and no override was applied", d.Frame, d.stepText(), d.Ended, d.Endpoint)
	}
	if d.Frame < 0 && d.Cut {
		return fmt.Sprintf("replay diverged: the tape is cut: it ends at frame %d, before its recorded run ended (the recording "+
			"was killed or crashed), and the agent went on to call %s; replay answered it with an error and did not send it", d.TapeEnds, d.Endpoint)
	}
	if d.Frame < 0 {
		near := ""
		if d.Nearest != "" {
			near = "; the nearest recorded request is " + d.Nearest
		}
		switch {
		case d.Again:
			return fmt.Sprintf("replay diverged: %s was asked once more than recorded: the recording called it %s, each answered already, once with this very request; replay answered it with an error and did not send it (--repeat serves a recorded answer again)%s", d.Endpoint, times(d.Recorded), near)
		case d.Recorded > 0:
			return fmt.Sprintf("replay diverged: %s has no more recorded calls: the recording called it %s, each answered already, none with this request; replay answered it with an error and did not send it%s", d.Endpoint, times(d.Recorded), near)
		}
		return fmt.Sprintf("replay diverged: %s was never called in the recording; replay answered it with an error and did not send it%s", d.Endpoint, near)
	}
	at := ""
	if d.Path != "" && d.Path != "(body)" {
		at = " first at " + d.Path
	}
	return fmt.Sprintf("replay diverged at frame %d%s: the live %s request differs from the recorded one%s:\n%s%s", d.Frame, d.stepText(), d.Endpoint, at, d.Diff, envText(d.Env))
}

// stepText is " (step N)", when the step is known.
func (d *Divergence) stepText() string {
	if d.Step <= 0 {
		return ""
	}
	return fmt.Sprintf(" (step %d)", d.Step)
}

// stepOf is the step of frame on t, counted from 1: one more than the
// step.commit frames before it.
func stepOf(t *tapefmt.Tape, frame int64) int {
	n := 1
	for f, err := range t.Frames(tapefmt.KindStep) {
		if err != nil || int64(f.Seq) >= frame {
			break
		}
		n++
	}
	return n
}

// times is "once", "twice" or "N times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// pretty is b, JSON, indented for a diff to read key by key
// (llmwire.Indent).
func pretty(b []byte) string { return llmwire.Indent(b) }

// checkIgnore refuses ignore paths, besides the defaults and those the
// tape was recorded with, that match no field of any recorded request:
// such a rule is most likely a typo, and would leave the divergence it was
// meant to fix.
func (m *Matcher) checkIgnore() error {
	var paths []string
	fields := m.rules.FieldRules()
	for _, p := range m.rules.Ignore {
		if !slices.Contains(reqmatch.DefaultIgnore, p) && !slices.Contains(fields, p) && !slices.Contains(m.recorded, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 && len(fields) == 0 {
		return nil
	}
	unmatched, err := reqmatch.Paths(paths, m.recordedBodies())
	if err != nil {
		return err
	}
	if unmatched = append(unmatched, m.unmatchedFields(fields)...); len(unmatched) == 0 {
		return nil
	}
	var b strings.Builder
	for _, u := range unmatched {
		fmt.Fprintf(&b, "\n  %s", u.Path)
		if len(u.Near) > 0 {
			fmt.Fprintf(&b, " (keys where it stops matching: %s)", strings.Join(u.Near, ", "))
		}
	}
	requests := 0
	for _, cs := range m.calls {
		requests += len(cs)
	}
	return &IgnoreError{Paths: unmatched, msg: fmt.Sprintf("ignore paths match no field in the tape's %d recorded requests:%s", requests, b.String())}
}

// IgnoreError is an ignore rule that can match nothing on the tape.
type IgnoreError struct {
	Paths []reqmatch.Unmatched
	msg   string
}

func (e *IgnoreError) Error() string { return e.msg }

// RulesFor returns the matching rules for a replay or fork of the tape at
// path: the defaults, then (with remembered) the rules remembered in its
// sidecar folder, then more; compiled. The rules the tape itself keeps
// (run.start's match) are added when it is opened.
func RulesFor(path string, more reqmatch.Rules, remembered bool) (*reqmatch.Rules, error) {
	var kept reqmatch.Rules
	if remembered {
		var err error
		if kept, err = reqmatch.Remembered(sidecar.Dir(path)); err != nil {
			return nil, err
		}
	}
	r := reqmatch.Default().Merge(kept).Merge(more)
	if err := r.Compile(); err != nil {
		return nil, err
	}
	return &r, nil
}
