package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Call is one recorded request and its response.
type Call struct {
	Request  *tapefmt.LLMRequest
	Response *tapefmt.LLMResponse // nil when the run ended before it came
	Seq      uint64               // frame of the request
	RespSeq  uint64
	body     []byte // as recorded
	respBody []byte // the response body, decoded when the matcher was made
	canon    []byte // canonical form, made on first need
	used     bool
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

// endpoint is how calls are grouped for matching: method and path.
func (c *Call) endpoint() string { return c.Request.Method + " " + c.Request.Path }

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
	mask  *tapefmt.Masker // the tape's own (run.start redact): live bodies are masked alike
}

// NewMatcher indexes every LLM call on the tape; rules must be compiled
// (nil is reqmatch.Default()).
func NewMatcher(t *tapefmt.Tape, rules *reqmatch.Rules) (*Matcher, error) {
	if rules == nil {
		rules = reqmatch.Default()
	}
	m := &Matcher{rules: rules, calls: map[string][]*Call{}, tape: t}
	if start, err := FirstRunStart(t); err == nil {
		if m.mask, err = tapefmt.NewMasker(start.Redact); err != nil {
			return nil, err
		}
	}
	byID := map[uint64]*Call{}
	for f, err := range t.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			c, err := m.newCall(p, f.Seq)
			if err != nil {
				return nil, err
			}
			byID[p.Call] = c
		case *tapefmt.LLMResponse:
			if c := byID[p.Call]; c != nil {
				c.Response, c.RespSeq = p, f.Seq
				if c.respBody, err = m.body(p.Body); err != nil {
					return nil, fmt.Errorf("response body of frame %d: %w", f.Seq, err)
				}
			}
		}
	}
	return m, nil
}

func (m *Matcher) newCall(p *tapefmt.LLMRequest, seq uint64) (*Call, error) {
	body, err := m.body(p.Body)
	if err != nil {
		return nil, fmt.Errorf("request body of frame %d: %w", seq, err)
	}
	c := &Call{Request: p, Seq: seq, body: body}
	m.calls[c.endpoint()] = append(m.calls[c.endpoint()], c)
	return c, nil
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
// canonical forms compared.
func (m *Matcher) Match(r MatchRequest) (*Call, *Divergence) {
	r.Body = m.mask.Mask(r.Body)
	m.mu.Lock()
	defer m.mu.Unlock()
	endpoint := r.Method + " " + r.Path
	calls := m.calls[endpoint]
	if c := pick(calls, r, func(c *Call) bool { return bytes.Equal(c.body, r.Body) }); c != nil {
		return c, nil
	}
	canon := canonicalBody(m.rules, r.Header, r.Body)
	var next *Call
	for _, c := range calls {
		if c.used {
			continue
		}
		if next == nil {
			next = c
		}
		if c.canon == nil {
			c.canon = canonicalBody(m.rules, c.Request.Header, c.body)
		}
	}
	if c := pick(calls, r, func(c *Call) bool { return bytes.Equal(c.canon, canon) }); c != nil {
		return c, nil
	}
	d := &Divergence{Endpoint: endpoint, Actual: pretty(canon), Frame: -1}
	if next != nil {
		d.Frame, d.Expected = int64(next.Seq), pretty(next.canon)
		d.Path = reqmatch.FirstDiff(next.canon, canon)
	}
	d.Diff = diffview.TextDiff("recorded", "live", d.Expected, d.Actual)
	return nil, d
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
	Endpoint string `json:"endpoint"`
	Frame    int64  `json:"expected_frame"` // the request frame expected next, -1 when none was
	// Path is the first field where the live request differs from the one
	// expected next ("messages.3.content"; "(body)" for the whole body).
	Path     string `json:"path,omitempty"`
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual"`
	Diff     string `json:"diff"`
}

// Error describes the divergence in one paragraph.
func (d *Divergence) Error() string {
	if d.Frame < 0 {
		return fmt.Sprintf("replay diverged: %s was never called in the recording (it has no more calls there)", d.Endpoint)
	}
	at := ""
	if d.Path != "" && d.Path != "(body)" {
		at = " first at " + d.Path
	}
	return fmt.Sprintf("replay diverged at frame %d: the live %s request differs from the recorded one%s:\n%s", d.Frame, d.Endpoint, at, d.Diff)
}

func pretty(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// checkIgnore refuses ignore paths, besides the defaults, that match no
// field of any recorded request: such a rule is most likely a typo, and
// would leave the divergence it was meant to fix.
func (m *Matcher) checkIgnore() error {
	var paths []string
	for _, p := range m.rules.Ignore {
		if !slices.Contains(reqmatch.DefaultIgnore, p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	var bodies []reqmatch.Body
	for _, cs := range m.calls {
		for _, c := range cs {
			bodies = append(bodies, reqmatch.Body{ContentType: c.Request.Header.Get("Content-Type"),
				Data: llmwire.DecodeBody(c.Request.Header, c.body).Text})
		}
	}
	unmatched, err := reqmatch.Paths(paths, bodies)
	if err != nil || len(unmatched) == 0 {
		return err
	}
	var b strings.Builder
	for _, u := range unmatched {
		fmt.Fprintf(&b, "\n  %s", u.Path)
		if len(u.Near) > 0 {
			fmt.Fprintf(&b, " (keys where it stops matching: %s)", strings.Join(u.Near, ", "))
		}
	}
	return &IgnoreError{Paths: unmatched, msg: fmt.Sprintf("ignore paths match no field in the tape's %d recorded requests:%s", len(bodies), b.String())}
}

// IgnoreError is an ignore rule that can match nothing on the tape.
type IgnoreError struct {
	Paths []reqmatch.Unmatched
	msg   string
}

func (e *IgnoreError) Error() string { return e.msg }

// RulesFor returns the matching rules for a replay or fork of the tape at
// path: the defaults, then the rules remembered in its sidecar folder, then
// more; compiled.
func RulesFor(path string, more reqmatch.Rules) (*reqmatch.Rules, error) {
	kept, err := reqmatch.Remembered(tapefmt.Sidecar(path))
	if err != nil {
		return nil, err
	}
	r := reqmatch.Default().Merge(kept).Merge(more)
	if err := r.Compile(); err != nil {
		return nil, err
	}
	return &r, nil
}

// len is the number of recorded calls.
func (m *Matcher) len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, cs := range m.calls {
		n += len(cs)
	}
	return n
}
