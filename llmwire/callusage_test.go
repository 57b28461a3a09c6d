package llmwire

import (
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestResponseUsageModel checks where the model comes from: the frame,
// else the body, else the request, read only when needed.
func TestResponseUsageModel(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","usage":{"prompt_tokens":10,"completion_tokens":1}}`)
	blob := func(tapefmt.Hash) ([]byte, error) { return body, nil }
	noBlob := func(tapefmt.Hash) ([]byte, error) {
		t.Error("read the body of a frame with usage and model")
		return nil, nil
	}
	req := func() Call { return Call{Model: "demo-small"} }
	hash := tapefmt.Hash{1}
	cases := []struct {
		resp  tapefmt.LLMResponse
		blob  func(tapefmt.Hash) ([]byte, error)
		model string
	}{
		{tapefmt.LLMResponse{Model: "o3", Usage: tapefmt.Usage{Input: 1}, Body: hash}, noBlob, "o3"},
		{tapefmt.LLMResponse{Body: hash}, blob, "gpt-4o"},
		{tapefmt.LLMResponse{Usage: tapefmt.Usage{Input: 1}}, nil, "demo-small"},
	}
	for i, c := range cases {
		got := ResponseUsage(&c.resp, c.blob, req)
		if got.Model != c.model || !got.Priced || got.Usage.Total() == 0 {
			t.Errorf("case %d: %+v, want model %s, priced", i, got, c.model)
		}
	}
	if got := ResponseUsage(&tapefmt.LLMResponse{Usage: tapefmt.Usage{Output: 5}}, nil, nil); !got.Unpriced() {
		t.Errorf("a call without a model: %+v, want unpriced", got)
	}
}

// TestResponseUsageOfALiveStream: a streamed answer that reported no
// usage, not on a tape yet (no body hash: the breaker's view of a live
// call), is counted from its text as its recorded frame is later: the
// breaker saw 0 output tokens, and let a run pass its cost cap by a third
// before it tripped.
func TestResponseUsageOfALiveStream(t *testing.T) {
	body := []byte("data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"A long and careful answer about the number seven, \"}}]}\n\n" +
		"data: {\"id\":\"c1\",\"model\":\"gpt-4o-mini\",\"choices\":[{\"delta\":{\"content\":\"which is prime and odd.\"}}]}\n\ndata: [DONE]\n\n")
	header := map[string][]string{"Content-Type": {"text/event-stream"}}
	req := func() Call {
		return Call{Provider: "openai", Path: "/v1/chat/completions", Model: "gpt-4o-mini",
			Body: []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"tell me about seven"}]}`)}
	}
	live := ResponseUsage(&tapefmt.LLMResponse{Status: 200, Header: header},
		func(tapefmt.Hash) ([]byte, error) { return body, nil }, req)
	taped := ResponseUsage(&tapefmt.LLMResponse{Status: 200, Header: header, Body: tapefmt.HashOf(body)},
		func(tapefmt.Hash) ([]byte, error) { return body, nil }, req)
	if live.Usage.Output == 0 || live.Usage != taped.Usage || !live.Estimated {
		t.Errorf("a live stream counts %+v, its taped frame %+v: want the same, output counted", live.Usage, taped.Usage)
	}
}
