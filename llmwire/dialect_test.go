package llmwire

import (
	"net/http"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// dialectCase is an answer of a provider as its docs show it, with the
// model, usage and text it must read as.
type dialectCase struct {
	name, provider, path string
	header               http.Header
	body                 []byte
	model                string
	usage                tapefmt.Usage
	text                 string
}

func dialectCases() []dialectCase {
	converseStream := append(append(append(append(append(
		esEvent("messageStart", `{"p":"abc","role":"assistant"}`),
		esEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"ab"}`)...),
		esEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" there"},"p":"ab"}`)...),
		esEvent("contentBlockStop", `{"contentBlockIndex":0,"p":"a"}`)...),
		esEvent("messageStop", `{"p":"abc","stopReason":"end_turn"}`)...),
		esEvent("metadata", `{"metrics":{"latencyMs":402},"p":"abc","usage":{"inputTokens":12,"outputTokens":5,"totalTokens":17,"cacheReadInputTokens":3}}`)...)
	return []dialectCase{
		{name: "gemini whole", provider: "gemini", path: "/v1beta/models/gemini-2.0-flash:generateContent",
			body: []byte(`{"candidates":[{"content":{"parts":[{"text":"Hello, world"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":8,"candidatesTokenCount":4,"totalTokenCount":12,"cachedContentTokenCount":2,"promptTokensDetails":[{"modality":"TEXT","tokenCount":8}]},"modelVersion":"gemini-2.0-flash"}`),
			model: "gemini-2.0-flash", usage: tapefmt.Usage{Input: 8, Output: 4, Cached: 2}, text: "Hello, world"},
		{name: "gemini sse", provider: "gemini", path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
			body: []byte("data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}],\"role\": \"model\"}}],\"usageMetadata\": {\"promptTokenCount\": 9,\"totalTokenCount\": 9},\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n" +
				"data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"lo\"}],\"role\": \"model\"},\"finishReason\": \"STOP\"}],\"usageMetadata\": {\"promptTokenCount\": 9,\"candidatesTokenCount\": 2,\"thoughtsTokenCount\": 30,\"totalTokenCount\": 41},\"modelVersion\": \"gemini-2.5-flash\"}\r\n\r\n"),
			model: "gemini-2.5-flash", usage: tapefmt.Usage{Input: 9, Output: 32, Reasoning: 30}, text: "Hello"},
		{name: "gemini array stream with a function call", provider: "vertex", path: "/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:streamGenerateContent",
			body:  []byte(`[{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]}}]},{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":6}}]`),
			usage: tapefmt.Usage{Input: 20, Output: 6}, text: `→ get_weather {"city":"Paris"}`},
		{name: "bedrock converse", provider: "bedrock", path: "/model/amazon.nova-pro-v1:0/converse",
			body:  []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Paris."}]}},"stopReason":"end_turn","usage":{"inputTokens":30,"outputTokens":3,"totalTokens":33},"metrics":{"latencyMs":321}}`),
			usage: tapefmt.Usage{Input: 30, Output: 3}, text: "Paris."},
		{name: "bedrock converse stream", provider: "bedrock", path: "/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream",
			header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, body: converseStream,
			usage: tapefmt.Usage{Input: 12, Output: 5, Cached: 3}, text: "Hi there"},
		{name: "bedrock converse stream with a tool call", provider: "bedrock", path: "/model/amazon.nova-pro-v1:0/converse-stream",
			body: append(append(append(
				esEvent("contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather"}},"p":"a"}`),
				esEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"city\":"}},"p":"a"}`)...),
				esEvent("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"\"Paris\"}"}},"p":"a"}`)...),
				esEvent("metadata", `{"usage":{"inputTokens":40,"outputTokens":12,"totalTokens":52},"metrics":{"latencyMs":300},"p":"a"}`)...),
			usage: tapefmt.Usage{Input: 40, Output: 12}, text: `→ get_weather {"city":"Paris"}`},
		{name: "bedrock invoke stream", provider: "bedrock", path: "/model/anthropic.claude-3-5-sonnet-20240620-v1:0/invoke-with-response-stream",
			body: bedrockInvokeStream(), model: "claude-3-5-sonnet-20240620", usage: tapefmt.Usage{Input: 21, Output: 9}, text: "Hello there"},
		{name: "bedrock invoke headers", provider: "bedrock", path: "/model/meta.llama3-70b-instruct-v1:0/invoke",
			header: http.Header{"X-Amzn-Bedrock-Input-Token-Count": {"17"}, "X-Amzn-Bedrock-Output-Token-Count": {"40"}},
			body:   []byte(`{"generation":"Once upon","prompt_token_count":17,"generation_token_count":40,"stop_reason":"stop"}`),
			usage:  tapefmt.Usage{Input: 17, Output: 40}},
		{name: "cohere v2", provider: "cohere", path: "/v2/chat",
			body:  []byte(`{"id":"c14c80c3","finish_reason":"COMPLETE","message":{"role":"assistant","content":[{"type":"text","text":"LLMs are neural networks."}]},"usage":{"billed_units":{"input_tokens":5,"output_tokens":7},"tokens":{"input_tokens":71,"output_tokens":7}}}`),
			usage: tapefmt.Usage{Input: 5, Output: 7}, text: "LLMs are neural networks."},
		{name: "cohere v2 stream", provider: "cohere", path: "/v2/chat",
			body: []byte("event: message-start\ndata: {\"id\":\"29f1\",\"type\":\"message-start\",\"delta\":{\"message\":{\"role\":\"assistant\",\"content\":[]}}}\n\n" +
				"event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\"Hi\"}}}}\n\n" +
				"event: content-delta\ndata: {\"type\":\"content-delta\",\"index\":0,\"delta\":{\"message\":{\"content\":{\"text\":\" all\"}}}}\n\n" +
				"event: message-end\ndata: {\"type\":\"message-end\",\"delta\":{\"finish_reason\":\"COMPLETE\",\"usage\":{\"billed_units\":{\"input_tokens\":3,\"output_tokens\":2},\"tokens\":{\"input_tokens\":69,\"output_tokens\":2}}}}\n\n"),
			usage: tapefmt.Usage{Input: 3, Output: 2}, text: "Hi all"},
		{name: "cohere v1 stream", provider: "cohere", path: "/v1/chat",
			body: []byte(`{"is_finished":false,"event_type":"stream-start","generation_id":"g"}
{"is_finished":false,"event_type":"text-generation","text":"Yes"}
{"is_finished":true,"event_type":"stream-end","response":{"text":"Yes","meta":{"billed_units":{"input_tokens":4,"output_tokens":1}}},"finish_reason":"COMPLETE"}
`),
			usage: tapefmt.Usage{Input: 4, Output: 1}, text: "Yes"},
		{name: "ollama chat stream", provider: "ollama", path: "/api/chat",
			body: []byte(`{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":"The"},"done":false}
{"model":"llama3.2","created_at":"2023-08-04T08:52:19.385406455-07:00","message":{"role":"assistant","content":" sky"},"done":false}
{"model":"llama3.2","created_at":"2023-08-04T19:22:45.499127Z","message":{"role":"assistant","content":""},"done":true,"total_duration":4883583458,"load_duration":1334875,"prompt_eval_count":26,"prompt_eval_duration":342546000,"eval_count":282,"eval_duration":4535599000}
`),
			model: "llama3.2", usage: tapefmt.Usage{Input: 26, Output: 282}, text: "The sky"},
		{name: "ollama generate", provider: "ollama", path: "/api/generate",
			body:  []byte(`{"model":"llama3.2","response":"Blue.","done":true,"prompt_eval_count":12,"eval_count":3}`),
			model: "llama3.2", usage: tapefmt.Usage{Input: 12, Output: 3}, text: "Blue."},
		{name: "mistral", provider: "mistral", path: "/v1/chat/completions",
			body:  []byte(`{"id":"cmpl-e5cc","object":"chat.completion","model":"mistral-small-latest","choices":[{"index":0,"message":{"role":"assistant","content":"Bonjour"},"finish_reason":"stop"}],"usage":{"prompt_tokens":16,"completion_tokens":34,"total_tokens":50}}`),
			model: "mistral-small-latest", usage: tapefmt.Usage{Input: 16, Output: 34}, text: "Bonjour"},
	}
}

// TestReadUsageByProvider reads each provider's answers, whole and
// streamed, as its docs show them.
func TestReadUsageByProvider(t *testing.T) {
	for _, c := range dialectCases() {
		model, u := ReadUsage(c.provider, c.path, c.header, c.body)
		if model != c.model || u != c.usage {
			t.Errorf("%s: ReadUsage = %q %+v, want %q %+v", c.name, model, u, c.model, c.usage)
		}
		if c.text == "" {
			continue
		}
		if got := AnswerText(c.provider, c.path, c.body); got != c.text {
			t.Errorf("%s: AnswerText = %q, want %q", c.name, got, c.text)
		}
	}
}

// TestRequestCall: a frame's request gives ResponseUsage its provider,
// path, body (decoded) and model, the path's where the body names none.
func TestRequestCall(t *testing.T) {
	req := &tapefmt.LLMRequest{Provider: "gemini", Path: "/v1beta/models/gemini-2.0-flash:streamGenerateContent", Body: tapefmt.Hash{7}}
	c := RequestCall(req, func(h tapefmt.Hash) ([]byte, error) { return []byte(`{"contents":[]}`), nil })
	if c.Provider != "gemini" || c.Model != "gemini-2.0-flash" || string(c.Body) != `{"contents":[]}` {
		t.Errorf("RequestCall = %+v", c)
	}
	if c := RequestCall(nil, nil); c.Provider != "" || c.Body != nil {
		t.Errorf("a missing request: %+v", c)
	}
	if m := PathModel("azure-openai", "/openai/deployments/prod-4o/chat/completions"); m != "prod-4o" {
		t.Errorf("PathModel(azure) = %q", m)
	}
	if m := PathModel("openai", "/v1/chat/completions"); m != "" {
		t.Errorf("PathModel(openai) = %q", m)
	}
}
