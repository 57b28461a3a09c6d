// Package tapegen builds synthetic agent runs: the sample tapes in
// testdata/tapes, and the data the benchmarks compare against other formats.
// Everything it makes is deterministic, so the bytes can be remade.
package tapegen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Spec shapes a synthetic run.
type Spec struct {
	Steps  int // agent steps: one LLM call, one tool call and one file write each
	Chunks int // streamed chunks per response; the agent echoes each to stdout
	Model  string
	// Tags label the run (run.start's tags); ID, when set, is the tape's
	// id instead of the samples' one. The sample tapes set neither.
	Tags map[string]string
	ID   [16]byte
}

// Interaction is one HTTP exchange with the model provider.
type Interaction struct {
	Request  []byte // request body (JSON)
	Response []byte // response body (server-sent events)
	Chunks   tapefmt.Chunks
	Words    []string // the streamed text, one chunk each
	Tool     string   // the tool call's arguments
}

const systemPrompt = "You are a careful coding agent. Use the tools to inspect and change files. " +
	"Explain each step briefly before acting, and never delete files you did not create."

const toolsJSON = `[{"type":"function","function":{"name":"write_file","description":"Write a file in the workspace",` +
	`"parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}},` +
	`{"type":"function","function":{"name":"read_file","description":"Read a file in the workspace",` +
	`"parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`

var vocabulary = strings.Fields("the plan is to update config parser so that tests pass then " +
	"write a summary of changes and check edge cases like empty input unicode names and large files")

// Interactions returns the provider exchanges of the run: each request
// resends the whole conversation so far, as agents do.
func Interactions(s Spec) []Interaction {
	msgs := []map[string]any{{"role": "system", "content": systemPrompt},
		{"role": "user", "content": "Refactor the config loader and keep the tests green."}}
	out := make([]Interaction, 0, s.Steps)
	for i := range s.Steps {
		req, _ := json.Marshal(map[string]any{"model": s.Model, "messages": msgs,
			"tools": json.RawMessage(toolsJSON), "stream": true, "stream_options": map[string]bool{"include_usage": true}})
		in := response(s, i, len(req))
		in.Request = req
		out = append(out, in)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": strings.Join(in.Words, ""),
				"tool_calls": []any{map[string]any{"id": callID(i), "type": "function",
					"function": map[string]string{"name": "write_file", "arguments": in.Tool}}}},
			map[string]any{"role": "tool", "tool_call_id": callID(i), "content": fmt.Sprintf("wrote %d bytes", 40+i)})
	}
	return out
}

func callID(i int) string { return fmt.Sprintf("call_%04d", i) }

// response builds one streamed chat completion.
func response(s Spec, step, reqLen int) Interaction {
	var in Interaction
	var sb strings.Builder
	id := fmt.Sprintf("chatcmpl-%08d", step)
	for c := range s.Chunks {
		w := vocabulary[(step*7+c)%len(vocabulary)] + " "
		in.Words = append(in.Words, w)
		fmt.Fprintf(&sb, `data: {"id":%q,"object":"chat.completion.chunk","created":1764662400,"model":%q,"choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", id, s.Model, w)
		in.Chunks = append(in.Chunks, tapefmt.Chunk{End: int64(sb.Len()), At: int64(200*time.Millisecond) + int64(c)*int64(15*time.Millisecond)})
	}
	in.Tool = fmt.Sprintf(`{"path":"src/step_%02d.py","content":"# step %d\nVALUE = %d\n"}`, step, step, step*step)
	fmt.Fprintf(&sb, `data: {"id":%q,"object":"chat.completion.chunk","created":1764662400,"model":%q,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":"write_file","arguments":%q}}]},"finish_reason":"tool_calls"}]}`+"\n\n", id, s.Model, callID(step), in.Tool)
	fmt.Fprintf(&sb, `data: {"id":%q,"object":"chat.completion.chunk","created":1764662400,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", id, s.Model, reqLen/4, s.Chunks+20, reqLen/4+s.Chunks+20)
	in.Chunks = append(in.Chunks, tapefmt.Chunk{End: int64(sb.Len()), At: int64(200*time.Millisecond) + int64(s.Chunks)*int64(15*time.Millisecond)})
	in.Response = []byte(sb.String())
	return in
}

// Header is the request header an SDK sends; the writer drops the key.
func Header() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer sk-test-not-a-real-key"},
		"User-Agent": {"OpenAI/Python 1.99.0"}}
}
