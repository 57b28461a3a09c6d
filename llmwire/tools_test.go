package llmwire

import (
	"math"
	"slices"
	"testing"
)

// TestResponseToolCalls: the tool calls of each API's answers, whole and
// streamed, with the ids their results come back under.
func TestResponseToolCalls(t *testing.T) {
	want := []ToolUse{{ID: "c1", Name: "read_file", Args: `{"path":"a.txt"}`}}
	for name, body := range map[string]string{
		"chat": `{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]}}]}`,
		"chat stream": "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n" +
			"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]}}]}\n\ndata: [DONE]\n\n",
		"responses": `{"output":[{"type":"function_call","call_id":"c1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"}]}`,
		"responses stream": "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}\n\n" +
			"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}]}}\n\n",
		"anthropic": `{"content":[{"type":"text","text":"reading"},{"type":"tool_use","id":"c1","name":"read_file","input":{"path":"a.txt"}}]}`,
		"anthropic stream": "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"c1\",\"name\":\"read_file\",\"input\":{}}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}\n\n",
	} {
		got := ResponseToolCalls([]byte(body))
		if !slices.Equal(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
		if _, calls := ResponseAnswer([]byte(body)); !slices.Equal(calls, want) {
			t.Errorf("%s: ResponseAnswer's calls %+v", name, calls)
		}
	}
}

// TestRequestToolResults: the results each API's requests carry back.
func TestRequestToolResults(t *testing.T) {
	want := []ToolResult{{ID: "c1", Content: "hello"}}
	for name, body := range map[string]string{
		"chat":      `{"messages":[{"role":"user","content":"go"},{"role":"tool","tool_call_id":"c1","content":"hello"}]}`,
		"responses": `{"input":[{"type":"function_call","call_id":"c1","name":"read_file","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"hello"}]}`,
		"anthropic": `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"hello"}]}]}`,
	} {
		if got := RequestToolResults([]byte(body)); !slices.Equal(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if got := RequestMaxOutput([]byte(`{"max_completion_tokens": 300}`)); got != 300 {
		t.Errorf("max output %d", got)
	}
	for body, want := range map[string]int64{`{"generationConfig": {"maxOutputTokens": 200}}`: 200, `{"inferenceConfig": {"maxTokens": 64}}`: 64,
		// A limit with a fraction or an exponent was read as none.
		`{"max_tokens": 1000.0}`: 1000, `{"max_tokens": 1e9}`: 1_000_000_000, `{"max_tokens": 10.5}`: 11,
		`{"max_tokens": 9223372036854775808}`: math.MaxInt64, `{"max_tokens": 1e400}`: math.MaxInt64,
		// Each of n answers is billed.
		`{"max_tokens": 16000, "n": 50}`: 800_000, `{"max_tokens": 16000, "n": 1}`: 16000, `{"n": 4}`: 0,
		`{"generationConfig": {"maxOutputTokens": 100, "candidateCount": 3}}`: 300,
		`{"max_tokens": 4611686018427387904, "n": 4}`:                         math.MaxInt64,
		// None asked: nothing, zero, a negative or a string.
		`{}`: 0, `{"max_tokens": 0}`: 0, `{"max_tokens": -5}`: 0, `{"max_tokens": "lots"}`: 0, `{"max_tokens": 10, "n": 0}`: 10} {
		if got := RequestMaxOutput([]byte(body)); got != want {
			t.Errorf("max output of %s: %d, want %d", body, got, want)
		}
	}
}
