package llmwire

import (
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestUsageMemoReadsABodyOnce: a hostile tape's thousand answers named
// one 256 MiB body, read and counted for each (ls of its folder took a
// minute); the memo reads it once, and prices each answer at its own rate.
func TestUsageMemoReadsABodyOnce(t *testing.T) {
	body := []byte(`{"model":"m","choices":[{"message":{"content":"hello there"}}]}`)
	reads := 0 // of the answer's body
	blob := func(h tapefmt.Hash) ([]byte, error) {
		if h == tapefmt.HashOf(body) {
			reads++
			return body, nil
		}
		return []byte(`{"model":"m","messages":[{"role":"user","content":"a question"}]}`), nil
	}
	req := &tapefmt.LLMRequest{Provider: "openai", Path: "/v1/chat/completions", Model: "m", Body: tapefmt.HashOf([]byte("q"))}
	var memo UsageMemo
	var first CallUsage
	for i := range 100 {
		resp := &tapefmt.LLMResponse{Status: 200, Body: tapefmt.HashOf(body)}
		if i == 99 {
			resp.Rate = &tapefmt.Rate{Input: 1, Output: 1}
		}
		c := memo.ResponseUsage(resp, req, blob)
		if i == 0 {
			first = c
		}
		if c.Usage != first.Usage || c.Model != first.Model || c.Estimated != first.Estimated {
			t.Fatalf("answer %d: %+v, the first %+v", i, c, first)
		}
		if i == 99 && (!c.Priced || c.Cost == first.Cost) {
			t.Errorf("the last answer was not priced at its own rate: %+v", c)
		}
	}
	if reads != 1 {
		t.Errorf("the answer's body was read %d times for 100 answers", reads)
	}
	if !first.Estimated || first.Usage.Input == 0 || first.Usage.Output == 0 {
		t.Errorf("the answer names no usage: it is counted, %+v", first)
	}
	if want := ResponseUsage(&tapefmt.LLMResponse{Status: 200, Body: tapefmt.HashOf(body)}, blob, func() Call { return RequestCall(req, blob) }); want.Usage != first.Usage {
		t.Errorf("the memo's usage %+v, ResponseUsage's %+v", first.Usage, want.Usage)
	}
}
