package llmsim

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func chatBody(model, user string, stream, usage bool) string {
	so := ""
	if usage {
		so = `,"stream_options":{"include_usage":true}`
	}
	return fmt.Sprintf(`{"model":%q,"stream":%t%s,"messages":[{"role":"system","content":"be brief"},{"role":"user","content":%q}]}`,
		model, stream, so, user)
}

// assembledCall is a tool call put back together from a response.
type assembledCall struct{ id, name, args string }

func TestChatJSON(t *testing.T) {
	_, url := newTestServer(t, "")
	resp, b := post(t, url, "/v1/chat/completions", chatBody("m1", bothUser, false, false))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if id := resp.Header.Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
		t.Errorf("x-request-id = %q", id)
	}
	m := decode(t, string(b))
	if get(m, "object") != "chat.completion" || !strings.HasPrefix(get(m, "id").(string), "chatcmpl-") || num(get(m, "created")) < epoch {
		t.Errorf("envelope: %s", b)
	}
	if get(m, "choices", 0, "finish_reason") != "tool_calls" || get(m, "choices", 0, "message", "content") != "Calling two tools for m1." {
		t.Errorf("choice: %s", b)
	}
	for i, want := range wantBoth {
		tc := get(m, "choices", 0, "message", "tool_calls", i)
		if get(tc, "type") != "function" || get(tc, "function", "name") != want.name || get(tc, "function", "arguments") != want.args {
			t.Errorf("tool call %d = %v, want %s %s", i, tc, want.name, want.args)
		}
		if id, _ := get(tc, "id").(string); !strings.HasPrefix(id, "call_") || len(id) != 29 {
			t.Errorf("call id %q", id)
		}
	}
	u := get(m, "usage")
	if num(get(u, "prompt_tokens")) < 1 || num(get(u, "completion_tokens")) < 1 ||
		num(get(u, "total_tokens")) != num(get(u, "prompt_tokens"))+num(get(u, "completion_tokens")) {
		t.Errorf("usage: %v", u)
	}
}

// chatStreamResult is a streamed chat completion put back together.
type chatStreamResult struct {
	text, finish string
	calls        []assembledCall
	usage        map[string]any
	chunks       int
}

// assembleChat reassembles a chat completion stream the way the SDKs do,
// checking the invariants every chunk must keep.
func assembleChat(t *testing.T, b []byte, includeUsage bool) chatStreamResult {
	t.Helper()
	events := parseSSE(t, b)
	if events[len(events)-1].data != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[len(events)-1].data)
	}
	var r chatStreamResult
	var id string
	for i, ev := range events[:len(events)-1] {
		if ev.name != "" {
			t.Fatalf("chat chunks have no event names, got %q", ev.name)
		}
		c := decode(t, ev.data)
		if i == 0 {
			id = get(c, "id").(string)
		}
		_, hasUsage := c["usage"]
		if get(c, "object") != "chat.completion.chunk" || get(c, "id") != id || hasUsage != includeUsage {
			t.Fatalf("chunk %d envelope: %s", i, ev.data)
		}
		if u, ok := get(c, "usage").(map[string]any); ok {
			if len(get(c, "choices").([]any)) != 0 || i != len(events)-2 {
				t.Fatalf("usage chunk must be last with empty choices: %s", ev.data)
			}
			r.usage = u
			continue
		}
		r.addChatDelta(t, c)
		r.chunks++
	}
	return r
}

func (r *chatStreamResult) addChatDelta(t *testing.T, c map[string]any) {
	t.Helper()
	if f, ok := get(c, "choices", 0, "finish_reason").(string); ok {
		r.finish = f
	}
	if s, ok := get(c, "choices", 0, "delta", "content").(string); ok {
		r.text += s
	}
	calls, _ := get(c, "choices", 0, "delta", "tool_calls").([]any)
	for _, tc := range calls {
		idx := num(get(tc, "index"))
		if idx == len(r.calls) {
			id, _ := get(tc, "id").(string)
			name, _ := get(tc, "function", "name").(string)
			if id == "" || name == "" {
				t.Fatalf("first delta of call %d lacks id or name: %v", idx, tc)
			}
			r.calls = append(r.calls, assembledCall{id: id, name: name})
		} else if idx != len(r.calls)-1 {
			t.Fatalf("tool call index %d out of order", idx)
		}
		s, _ := get(tc, "function", "arguments").(string)
		r.calls[idx].args += s
	}
}

func TestChatStream(t *testing.T) {
	_, url := newTestServer(t, "")
	for _, tc := range []struct {
		user         string
		includeUsage bool
		text, finish string
		calls        int
	}{
		{bothUser, true, "Calling two tools for m1.", "tool_calls", 2},
		{bothUser, false, "Calling two tools for m1.", "tool_calls", 2},
		{"tool only", true, "", "tool_calls", 1},
		{"text", true, "Plain text from m1: ünïcode ✓ done.", "stop", 0},
	} {
		t.Run(fmt.Sprintf("%s/usage=%t", tc.user, tc.includeUsage), func(t *testing.T) {
			resp, b := post(t, url, "/v1/chat/completions", chatBody("m1", tc.user, true, tc.includeUsage))
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
				t.Fatalf("content type %q", ct)
			}
			r := assembleChat(t, b, tc.includeUsage)
			if r.text != tc.text || r.finish != tc.finish || len(r.calls) != tc.calls {
				t.Fatalf("got text %q finish %q calls %d", r.text, r.finish, len(r.calls))
			}
			if r.chunks < 4 {
				t.Errorf("only %d chunks: the answer was not streamed in pieces", r.chunks)
			}
			for i, c := range r.calls {
				mustJSONObject(t, c.args)
				if tc.user == bothUser && (c.name != wantBoth[i].name || c.args != wantBoth[i].args) {
					t.Errorf("call %d = %s %s, want %s %s", i, c.name, c.args, wantBoth[i].name, wantBoth[i].args)
				}
			}
			if tc.includeUsage == (r.usage == nil) {
				t.Errorf("usage = %v with include_usage %t", r.usage, tc.includeUsage)
			}
		})
	}
}

func TestResponsesJSON(t *testing.T) {
	_, url := newTestServer(t, "")
	body := `{"model":"m1","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"please both"}]}]}`
	_, b := post(t, url, "/v1/responses", body)
	m := decode(t, string(b))
	if get(m, "object") != "response" || get(m, "status") != "completed" || !strings.HasPrefix(get(m, "id").(string), "resp_") {
		t.Fatalf("envelope: %s", b)
	}
	if get(m, "output", 0, "type") != "message" || get(m, "output", 0, "content", 0, "text") != "Calling two tools for m1." {
		t.Errorf("message item: %s", b)
	}
	for i, want := range wantBoth {
		it := get(m, "output", i+1)
		if get(it, "type") != "function_call" || get(it, "name") != want.name || get(it, "arguments") != want.args {
			t.Errorf("output %d = %v", i+1, it)
		}
	}
	u := get(m, "usage")
	if num(get(u, "input_tokens")) < 1 || num(get(u, "total_tokens")) != num(get(u, "input_tokens"))+num(get(u, "output_tokens")) {
		t.Errorf("usage %v", u)
	}
}

func TestResponsesStream(t *testing.T) {
	_, url := newTestServer(t, "")
	_, b := post(t, url, "/v1/responses", `{"model":"m1","stream":true,"input":"please both"}`)
	events := parseSSE(t, b)
	var text string
	args := map[int]string{}
	for i, ev := range events {
		d := decode(t, ev.data)
		if get(d, "type") != ev.name || num(get(d, "sequence_number")) != i {
			t.Fatalf("event %d: name %q, data %s", i, ev.name, ev.data)
		}
		switch ev.name {
		case "response.output_text.delta":
			text += get(d, "delta").(string)
		case "response.function_call_arguments.delta":
			args[num(get(d, "output_index"))] += get(d, "delta").(string)
		}
	}
	if events[0].name != "response.created" || events[len(events)-1].name != "response.completed" {
		t.Fatalf("first %q last %q", events[0].name, events[len(events)-1].name)
	}
	if text != "Calling two tools for m1." || args[1] != wantBoth[0].args || args[2] != wantBoth[1].args {
		t.Errorf("text %q args %v", text, args)
	}
	final := decode(t, events[len(events)-1].data)
	if num(get(final, "response", "usage", "output_tokens")) < 1 || get(final, "response", "output", 2, "arguments") != wantBoth[1].args {
		t.Errorf("completed: %s", events[len(events)-1].data)
	}
}

func anthropicBody(model, user string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"max_tokens":256,"stream":%t,"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":%q}]}`,
		model, stream, user)
}

func TestMessagesJSON(t *testing.T) {
	_, url := newTestServer(t, "")
	resp, b := post(t, url, "/v1/messages", anthropicBody("claude-x", bothUser, false))
	if !strings.HasPrefix(resp.Header.Get("Request-Id"), "req_") {
		t.Errorf("request-id %q", resp.Header.Get("Request-Id"))
	}
	m := decode(t, string(b))
	if get(m, "type") != "message" || get(m, "stop_reason") != "tool_use" || !strings.HasPrefix(get(m, "id").(string), "msg_01") {
		t.Fatalf("envelope: %s", b)
	}
	if get(m, "content", 0, "type") != "text" || get(m, "content", 0, "text") != "Calling two tools for claude-x." {
		t.Errorf("text block: %s", b)
	}
	for i, want := range wantBoth {
		blk := get(m, "content", i+1)
		in, _ := json.Marshal(get(blk, "input"))
		var wantIn any
		json.Unmarshal([]byte(want.args), &wantIn)
		wantJSON, _ := json.Marshal(wantIn)
		if get(blk, "type") != "tool_use" || get(blk, "name") != want.name || string(in) != string(wantJSON) ||
			!strings.HasPrefix(get(blk, "id").(string), "toolu_01") {
			t.Errorf("block %d = %v", i+1, blk)
		}
	}
	if num(get(m, "usage", "input_tokens")) < 1 || num(get(m, "usage", "output_tokens")) < 1 {
		t.Errorf("usage: %v", get(m, "usage"))
	}
}

func TestMessagesStream(t *testing.T) {
	_, url := newTestServer(t, "")
	_, b := post(t, url, "/v1/messages", anthropicBody("claude-x", bothUser, true))
	events := parseSSE(t, b)
	blocks := map[int]string{}
	kinds := map[int]string{}
	var stop string
	var outTokens int
	for _, ev := range events {
		d := decode(t, ev.data)
		if get(d, "type") != ev.name {
			t.Fatalf("event %q carries type %v", ev.name, get(d, "type"))
		}
		idx := num(get(d, "index"))
		switch ev.name {
		case "content_block_start":
			kinds[idx] = get(d, "content_block", "type").(string)
		case "content_block_delta":
			switch get(d, "delta", "type") {
			case "text_delta":
				blocks[idx] += get(d, "delta", "text").(string)
			case "input_json_delta":
				blocks[idx] += get(d, "delta", "partial_json").(string)
			}
		case "message_delta":
			stop, outTokens = get(d, "delta", "stop_reason").(string), num(get(d, "usage", "output_tokens"))
		}
	}
	names := []string{events[0].name, events[1].name, events[2].name, events[len(events)-2].name, events[len(events)-1].name}
	if strings.Join(names, ",") != "message_start,content_block_start,ping,message_delta,message_stop" {
		t.Errorf("event order: %v", names)
	}
	if kinds[0] != "text" || blocks[0] != "Calling two tools for claude-x." || kinds[1] != "tool_use" || kinds[2] != "tool_use" {
		t.Errorf("blocks %v %v", kinds, blocks)
	}
	if blocks[1] != wantBoth[0].args || blocks[2] != wantBoth[1].args || stop != "tool_use" || outTokens < 1 {
		t.Errorf("tool input %q %q stop %q tokens %d", blocks[1], blocks[2], stop, outTokens)
	}
}
