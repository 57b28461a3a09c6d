package llmwire

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// usagelessStream is a chat completion streamed the official SDK's
// default way (stream=True without stream_options): no usage anywhere.
const usagelessStream = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":"The capital of France is Paris."},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`

// TestUsagelessStreamEstimated is issue 29's "a streamed openai call
// without stream_options showed 0 tokens and $0.0000": its tokens are
// counted with the model's tokenizer and priced, marked estimated.
func TestUsagelessStreamEstimated(t *testing.T) {
	req := []byte(`{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"What is the capital of France?"}]}`)
	resp := tapefmt.LLMResponse{Status: 200, Body: tapefmt.Hash{1}}
	c := ResponseUsage(&resp, func(tapefmt.Hash) ([]byte, error) { return []byte(usagelessStream), nil },
		func() Call {
			return Call{Provider: "openai", Path: "/v1/chat/completions", Model: "gpt-4o-mini", Body: req}
		})
	// o200k_base: "The capital of France is Paris." is 7 tokens; the
	// request's strings ("system", "You are terse.", "user", "What is the
	// capital of France?", and "true" is not a string) plus 3 a message
	// and 3 for the reply.
	if !c.Estimated || c.Usage.Output != 7 || c.Usage.Input < 15 || c.Usage.Input > 30 || !c.Priced || c.Cost <= 0 {
		t.Fatalf("usage-less stream: %+v; want estimated, 7 output tokens, ~20 input, priced", c)
	}
	if c.Model != "gpt-4o-mini-2024-07-18" || c.Mark() != "~" {
		t.Errorf("model %q mark %q", c.Model, c.Mark())
	}
	reported := tapefmt.LLMResponse{Status: 200, Body: tapefmt.Hash{1}}
	withUsage := usagelessStream + `data: {"id":"chatcmpl-1","model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":24,"completion_tokens":7}}` + "\n\n"
	if c := ResponseUsage(&reported, func(tapefmt.Hash) ([]byte, error) { return []byte(withUsage), nil }, nil); c.Estimated || c.Usage.Input != 24 {
		t.Errorf("a stream with usage: %+v, want the reported usage, not estimated", c)
	}
	failed := tapefmt.LLMResponse{Status: 429, Body: tapefmt.Hash{1}}
	if c := ResponseUsage(&failed, func(tapefmt.Hash) ([]byte, error) { return []byte(`{"error":{"message":"rate limited"}}`), nil },
		func() Call { return Call{Provider: "openai", Body: req} }); c.Usage.Total() != 0 || c.Estimated {
		t.Errorf("a refused call: %+v, want no usage", c)
	}
}

// TestCountTokens: OpenAI's models are counted by their BPE; others at 4
// bytes a token.
func TestCountTokens(t *testing.T) {
	for _, c := range []struct {
		model, text string
		n           int64
		exact       bool
	}{
		{"gpt-4o", "hello world", 2, true},
		{"openai/gpt-4.1-mini", "hello world", 2, true},
		{"gpt-3.5-turbo", "hello world", 2, true},
		{"claude-3-7-sonnet", "hello world", 3, false},
		{"", strings.Repeat("a", 8), 2, false},
	} {
		if n, exact := CountTokens(c.model, c.text); n != c.n || exact != c.exact {
			t.Errorf("CountTokens(%q, %q) = %d, %v; want %d, %v", c.model, c.text, n, exact, c.n, c.exact)
		}
	}
}

// TestEstimateOtherProviders: a Gemini answer without usageMetadata is
// counted at 4 bytes a token from its contents and candidates.
func TestEstimateOtherProviders(t *testing.T) {
	req := []byte(`{"contents":[{"role":"user","parts":[{"text":"Write a haiku about the sea"}]}]}`)
	body := []byte(`{"candidates":[{"content":{"parts":[{"text":"Waves fold into foam"}],"role":"model"}}]}`)
	resp := tapefmt.LLMResponse{Status: 200, Body: tapefmt.Hash{1}}
	c := ResponseUsage(&resp, func(tapefmt.Hash) ([]byte, error) { return body, nil },
		func() Call {
			return Call{Provider: "gemini", Path: "/v1beta/models/gemini-2.0-flash:generateContent", Model: "gemini-2.0-flash", Body: req}
		})
	if !c.Estimated || c.Usage.Output != 5 || c.Usage.Input == 0 || c.Model != "gemini-2.0-flash" || !c.Priced {
		t.Errorf("gemini without usage: %+v", c)
	}
}
