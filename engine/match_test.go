package engine

import (
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

func TestExtractUsage(t *testing.T) {
	cases := []struct {
		name, body, model string
		want              tapefmt.Usage
	}{
		{"openai chat", `{"model":"gpt-4o","usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			"gpt-4o", tapefmt.Usage{Input: 10, Output: 5, Cached: 4, Reasoning: 2}},
		{"openai stream", "data: {\"model\":\"gpt-4o-mini\",\"choices\":[]}\n\ndata: {\"model\":\"gpt-4o-mini\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n",
			"gpt-4o-mini", tapefmt.Usage{Input: 7, Output: 3}},
		{"responses stream", "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"o3\",\"usage\":{\"input_tokens\":9,\"output_tokens\":4,\"output_tokens_details\":{\"reasoning_tokens\":3}}}}\n\n",
			"o3", tapefmt.Usage{Input: 9, Output: 4, Reasoning: 3}},
		{"anthropic stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":8,\"cache_creation_input_tokens\":30,\"output_tokens\":1}}}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n",
			"claude-sonnet-4", tapefmt.Usage{Input: 20, Output: 15, Cached: 8, CacheWrite: 30}},
		{"garbage", "data: {not json\n\n<html>", "", tapefmt.Usage{}},
	}
	for _, c := range cases {
		model, u := llmwire.ExtractUsage([]byte(c.body))
		if model != c.model || u != c.want {
			t.Errorf("%s: got %q %+v, want %q %+v", c.name, model, u, c.model, c.want)
		}
	}
}

func TestParseSpeedAndUpstreams(t *testing.T) {
	for in, want := range map[string]Speed{"instant": 0, "realtime": 1, "2x": 2, "0.5x": 0.5} {
		if got, err := ParseSpeed(in); err != nil || got != want {
			t.Errorf("ParseSpeed(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"fast", "0x", "-1x", "2"} {
		if _, err := ParseSpeed(bad); err == nil {
			t.Errorf("ParseSpeed(%q) accepted", bad)
		}
	}
	if _, err := ParseUpstreams([]string{"openai=http://127.0.0.1:1/v1", "anthropic=https://gw.example/x"}); err != nil {
		t.Fatal(err)
	}
	// An empty port went to the scheme's (80), unsaid; a port alone names no host.
	for _, bad := range []string{"openai", "cohere=http://x", "openai=ftp://x", "openai=/v1", "openai=http://127.0.0.1:/v1", "openai=http://:8080/v1"} {
		if _, err := ParseUpstreams([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseUpstreams(%q) = %v; want an error naming it", bad, err)
		}
	}
}

func TestResolveUpstreams(t *testing.T) {
	got := resolveUpstreams(map[string]string{"anthropic": "http://b"}, map[string]string{"OPENAI_BASE_URL": "http://agent/v1/"})
	if got["openai"] != "http://agent/v1" || got["anthropic"] != "http://b" {
		t.Fatalf("got %v", got)
	}
}
