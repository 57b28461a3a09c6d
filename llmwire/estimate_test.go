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

// longConversation is a chat request of n turns, each a few hundred bytes
// of prose, and a usage-less streamed answer.
func longConversation(n int) (req, answer []byte) {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","stream":true,"messages":[{"role":"system","content":"You are a careful agent."}`)
	turn := strings.Repeat("The quick brown fox jumps over the lazy dog, then checks the logs again. ", 5)
	for i := range n {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		b.WriteString(`,{"role":"` + role + `","content":"` + turn + `"}`)
	}
	b.WriteString("]}")
	var a strings.Builder
	for range 200 {
		a.WriteString(`data: {"id":"c","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"word "}}]}` + "\n\n")
	}
	a.WriteString("data: [DONE]\n\n")
	return []byte(b.String()), []byte(a.String())
}

// BenchmarkEstimateLongConversation is the cost of counting one
// usage-less call of a 200-turn conversation (about 75 KB, 16k tokens of
// o200k_base), what the recorder pays per such call (for the live counter
// and the breaker) and each view per call it shows: cold, every message
// counted by the BPE; warm, the earlier calls of the run having counted
// its messages already (a conversation's requests repeat them).
func BenchmarkEstimateLongConversation(b *testing.B) {
	req, answer := longConversation(200)
	resp := tapefmt.LLMResponse{Status: 200, Body: tapefmt.Hash{1}}
	blob := func(tapefmt.Hash) ([]byte, error) { return answer, nil }
	call := func() Call { return Call{Provider: "openai", Path: "/v1/chat/completions", Model: "gpt-4o", Body: req} }
	ResponseUsage(&resp, blob, call) // the tokenizer's ranks load once, lazily
	for _, warm := range []bool{false, true} {
		name := map[bool]string{false: "cold", true: "warm"}[warm]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(req) + len(answer)))
			for range b.N {
				if !warm {
					countCache.mu.Lock()
					clear(countCache.m)
					countCache.mu.Unlock()
				}
				if c := ResponseUsage(&resp, blob, call); !c.Estimated {
					b.Fatal("not counted")
				}
			}
		})
	}
}
