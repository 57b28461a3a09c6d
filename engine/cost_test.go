package engine

import (
	"bytes"
	"compress/gzip"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// costCall is one call of the tape costTape records: what the agent asked
// for and what the proxy wrote of the answer.
type costCall struct {
	reqModel string
	resp     tapefmt.LLMResponse
	body     []byte
}

// costCalls cover every way a response holds its usage and model.
func costCalls(t *testing.T) []costCall {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"model":"claude-sonnet-4-5","usage":{"input_tokens":300,"cache_read_input_tokens":5000,"output_tokens":50}}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return []costCall{
		{ // usage and model on the frame
			"gpt-4o-mini", tapefmt.LLMResponse{Status: 200, Model: "gpt-4o-mini", Usage: tapefmt.Usage{Input: 1000, Output: 200, Cached: 400}},
			[]byte(`{"model":"gpt-4o-mini","usage":{"prompt_tokens":1000,"completion_tokens":200,"prompt_tokens_details":{"cached_tokens":400}}}`),
		},
		{ // usage and model only in the body
			"gpt-4o", tapefmt.LLMResponse{Status: 200},
			[]byte(`{"model":"gpt-4o","usage":{"prompt_tokens":2000,"completion_tokens":100,"prompt_tokens_details":{"cached_tokens":1000}}}`),
		},
		{ // a gzip body and no frame usage; Anthropic counts cache reads apart
			"claude-sonnet-4-5", tapefmt.LLMResponse{Status: 200, Header: http.Header{"Content-Encoding": {"gzip"}}},
			gz.Bytes(),
		},
		{ // the model only on the request
			"demo-large", tapefmt.LLMResponse{Status: 200, Usage: tapefmt.Usage{Input: 500, Output: 50}},
			[]byte(`{"usage":{"prompt_tokens":500,"completion_tokens":50}}`),
		},
		{ // a model without a rate
			"my-local-llama", tapefmt.LLMResponse{Status: 200, Model: "my-local-llama", Usage: tapefmt.Usage{Input: 700, Output: 70}},
			[]byte(`{"model":"my-local-llama","usage":{"prompt_tokens":700,"completion_tokens":70}}`),
		},
	}
}

// Figures of costCalls, by hand: per million tokens, gpt-4o-mini 600 fresh
// × 0.15 + 400 cached × 0.075 + 200 out × 0.60; gpt-4o 1000 × 2.50 + 1000
// × 1.25 + 100 × 10; claude-sonnet-4 300 × 3 + 5000 cached × 0.30 + 50 ×
// 15; demo-large 500 × 3 + 50 × 15; my-local-llama unpriced.
const (
	costTokens = 1200 + 2100 + 350 + 550 + 770
	costUSD    = (90 + 30 + 120 + 2500 + 1250 + 1000 + 900 + 1500 + 750 + 1500 + 750) / 1e6
)

// costTape records costCalls through the proxy, as a fork does, and
// returns the tape and the events the fork counter was sent.
func costTape(t *testing.T) (string, []Event) {
	path := filepath.Join(t.TempDir(), "costs.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	p := &proxy{tape: w, onEvent: func(e Event) { events = append(events, e) }}
	for i, c := range costCalls(t) {
		x := &exchange{provider: provider{Name: "openai"}, path: "/v1/chat/completions", call: uint64(i + 1),
			req:  httptest.NewRequest(http.MethodPost, "/openai/v1/chat/completions", nil),
			body: []byte(`{"model":"` + c.reqModel + `","messages":[]}`)}
		if err := p.recordRequest(x); err != nil {
			t.Fatal(err)
		}
		p.recordResponse(x, answer{resp: c.resp, body: c.body})
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, events
}

// TestCostAgrees checks that `ls`, the turntable, `diff` and the live fork
// counter find the same tokens and cost on the same calls, and that each
// reports the call to an unknown model as unpriced.
func TestCostAgrees(t *testing.T) {
	path, events := costTape(t)
	check := func(view string, tokens int64, usd float64, unpriced int) {
		t.Helper()
		if tokens != costTokens || math.Abs(usd-costUSD) > 1e-12 || unpriced != 1 {
			t.Errorf("%s: %d tokens, $%.6f, %d unpriced; want %d tokens, $%.6f, 1 unpriced",
				view, tokens, usd, unpriced, costTokens, costUSD)
		}
	}

	tape, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tape.Close()
	s, err := timeline.Summarize(path, tape)
	if err != nil {
		t.Fatal(err)
	}
	check("ls (timeline.Summarize)", s.Usage.Total(), s.Cost, len(s.Unpriced))
	if !slices.Equal(s.Unpriced, []string{"my-local-llama"}) {
		t.Errorf("ls: unpriced models %q, want [my-local-llama]", s.Unpriced)
	}

	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	tok, usd := tl.Totals(tl.Len() - 1)
	check("turntable (timeline.Timeline.Totals)", tok, usd, tl.Unpriced(tl.Len()-1))

	dtl, err := timeline.LoadForDiff(path)
	if err != nil {
		t.Fatal(err)
	}
	dt := diffview.Compare(dtl, dtl).LeftTotals
	check("diff (timeline.LoadForDiff)", dt.Tokens, dt.Cost, dt.Unpriced)

	var ftok int64
	var fusd float64
	var funpriced int
	for _, e := range events {
		if e.Kind == EventResponse {
			ftok, fusd = ftok+e.Usage.Total(), fusd+e.Cost
			if e.Unpriced() {
				funpriced++
			}
		}
	}
	check("fork counter (Event)", ftok, fusd, funpriced)
}
