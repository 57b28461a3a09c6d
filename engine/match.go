package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// DefaultIgnore are the top-level request fields replay leaves out when it
// matches a request to the tape: they change between runs without changing
// what the model is asked.
var DefaultIgnore = []string{"stream_options", "user", "metadata", "service_tier"}

// canonical returns the form of a request body that replay matches on: a
// JSON object with its keys sorted, numbers kept as written and the ignored
// top-level fields dropped. A body that is not a JSON object is its own
// canonical form.
func canonical(body []byte, ignore []string) []byte {
	v, err := decodeJSON(body)
	obj, ok := v.(map[string]any)
	if err != nil || !ok {
		return body
	}
	for _, f := range ignore {
		delete(obj, f)
	}
	out, err := json.Marshal(obj) // map keys come out sorted
	if err != nil {
		return body
	}
	return out
}

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

// endpoint is how calls are grouped for matching: method and path.
func (c *Call) endpoint() string { return c.Request.Method + " " + c.Request.Path }

// Matcher hands out recorded calls to live requests: per endpoint, the first
// unused call whose canonical body equals the request's, so identical
// requests replay in the order they were recorded. It is safe for
// concurrent use.
type Matcher struct {
	mu     sync.Mutex
	ignore []string
	calls  map[string][]*Call
	tape   *tapefmt.Tape
}

// NewMatcher indexes every LLM call on the tape.
func NewMatcher(t *tapefmt.Tape, ignore []string) (*Matcher, error) {
	m := &Matcher{ignore: ignore, calls: map[string][]*Call{}, tape: t}
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

func (m *Matcher) body(h tapefmt.Hash) ([]byte, error) {
	if h.IsZero() {
		return nil, nil
	}
	return m.tape.Blob(h)
}

// Match finds the recorded call for a live request, or describes how the
// request diverges from what the tape expected next. A body sent byte for
// byte as recorded matches without being parsed; only when none does are
// canonical forms compared.
func (m *Matcher) Match(method, path string, body []byte) (*Call, *Divergence) {
	m.mu.Lock()
	defer m.mu.Unlock()
	calls := m.calls[method+" "+path]
	var next *Call
	for _, c := range calls {
		if !c.used && bytes.Equal(c.body, body) {
			c.used = true
			return c, nil
		}
	}
	canon := canonical(body, m.ignore)
	for _, c := range calls {
		if c.used {
			continue
		}
		if next == nil {
			next = c
		}
		if c.canon == nil {
			c.canon = canonical(c.body, m.ignore)
		}
		if bytes.Equal(c.canon, canon) {
			c.used = true
			return c, nil
		}
	}
	d := &Divergence{Endpoint: method + " " + path, Actual: pretty(canon), Frame: -1}
	if next != nil {
		d.Frame, d.Expected = int64(next.Seq), pretty(next.canon)
	}
	d.Diff = diffview.TextDiff("recorded", "live", d.Expected, d.Actual)
	return nil, d
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
	Expected string `json:"expected,omitempty"`
	Actual   string `json:"actual"`
	Diff     string `json:"diff"`
}

// Error describes the divergence in one paragraph.
func (d *Divergence) Error() string {
	if d.Frame < 0 {
		return fmt.Sprintf("replay diverged: %s was never called in the recording (it has no more calls there)", d.Endpoint)
	}
	return fmt.Sprintf("replay diverged at frame %d: the live %s request differs from the recorded one:\n%s", d.Frame, d.Endpoint, d.Diff)
}

func pretty(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}
