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

// TestResponseUsageOfTokenCounting: a token-counting call (Anthropic's
// count_tokens, OpenAI's input_tokens, Gemini's countTokens, Bedrock's
// count-tokens) bills nothing: its usage is none, not counted from its
// request's text (jukebox cost billed the Anthropic SDK's
// messages.countTokens as ~11 input tokens).
func TestResponseUsageOfTokenCounting(t *testing.T) {
	body := []byte(`{"input_tokens":11}`)
	blob := func(tapefmt.Hash) ([]byte, error) { return body, nil }
	for _, c := range []struct{ provider, path, model string }{
		{"anthropic", "/v1/messages/count_tokens", "claude-sonnet-4-5"},
		{"openai", "/v1/responses/input_tokens", "gpt-4o"},
		{"gemini", "/v1beta/models/gemini-2.0-flash:countTokens", "gemini-2.0-flash"},
		{"bedrock", "/model/anthropic.claude-3-haiku-20240307-v1:0/count-tokens", "anthropic.claude-3-haiku-20240307-v1:0"},
	} {
		req := func() Call {
			return Call{Provider: c.provider, Path: c.path, Model: c.model,
				Body: []byte(`{"model":"` + c.model + `","messages":[{"role":"user","content":"how many tokens is this question?"}]}`)}
		}
		u := ResponseUsage(&tapefmt.LLMResponse{Status: 200, Body: tapefmt.HashOf(body)}, blob, req)
		if u.Usage != (tapefmt.Usage{}) || u.Estimated || u.Cost != 0 {
			t.Errorf("%s: usage %+v, estimated %v, cost %v; want none", c.path, u.Usage, u.Estimated, u.Cost)
		}
	}
	if Free("/v1/messages") || Free("/v1/chat/completions") || Free("/v1beta/models/gemini-2.0-flash:generateContent") {
		t.Error("a call that uses tokens is free")
	}
}
