package export

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/jaegertest"
)

// The attribute names below are the vocabularies' own, as their
// specifications write them: OpenInference's spec/semantic_conventions.md
// (Arize-ai/openinference) and OpenLLMetry's semconv_ai SpanAttributes
// with the gen_ai.prompt/completion attributes its instrumentations set
// (traceloop/openllmetry).

// TestCompatOpenInference: with Compat openinference, the model call, the
// tool call and the agent carry OpenInference's kind, model, token counts,
// parameters and flattened messages, beside the GenAI attributes.
func TestCompatOpenInference(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	spans, _ := convert(t, path, Options{Path: path, IncludeContent: true, Compat: CompatOpenInference})
	first := attrs(named(spans, "chat claude-sonnet-4-5")[0])
	for k, v := range map[string]string{
		"openinference.span.kind": "LLM", "llm.model_name": "claude-sonnet-4-5", "llm.provider": "anthropic", "llm.system": "anthropic",
		"llm.token_count.prompt": "130", "llm.token_count.completion": "15", "llm.token_count.total": "145",
		"llm.token_count.prompt_details.cache_read": "100", "llm.token_count.prompt_details.cache_write": "20",
		"llm.invocation_parameters":                                          `{"max_tokens":100}`,
		"llm.input_messages.0.message.role":                                  "system",
		"llm.input_messages.0.message.content":                               "You are terse.",
		"llm.input_messages.1.message.role":                                  "user",
		"llm.input_messages.1.message.content":                               "weather in Oslo?",
		"llm.output_messages.0.message.role":                                 "assistant",
		"llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
		"input.mime_type":                                                    "application/json",
		// The GenAI names stay.
		"gen_ai.usage.input_tokens": "130", "gen_ai.operation.name": "chat",
	} {
		if first[k] != v {
			t.Errorf("chat span: %s = %q, want %q", k, first[k], v)
		}
	}
	if !strings.Contains(first["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"], "Oslo") {
		t.Errorf("tool call arguments: %q", first["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"])
	}
	tool := attrs(one(t, spans, "execute_tool get_weather"))
	if tool["openinference.span.kind"] != "TOOL" || tool["tool.name"] != "get_weather" || tool["tool_call.id"] != "toolu_1" || tool["input.value"] == "" {
		t.Errorf("tool span: %v", tool)
	}
	root := attrs(one(t, spans, "invoke_agent support-bot"))
	if root["openinference.span.kind"] != "AGENT" {
		t.Errorf("root span kind %q, want AGENT", root["openinference.span.kind"])
	}
	// Without content asked for, none goes out under the other names either.
	plain, _ := convert(t, path, Options{Path: path, Compat: CompatOpenInference})
	text := allText(plain)
	for _, leak := range []string{"weather in Oslo", "You are terse", "llm.input_messages", "input.value"} {
		if strings.Contains(text, leak) {
			t.Errorf("without IncludeContent the spans hold %q", leak)
		}
	}
	if a := attrs(named(plain, "chat claude-sonnet-4-5")[0]); a["llm.token_count.prompt"] != "130" {
		t.Errorf("counts go without content: %v", a)
	}
}

// TestCompatOpenLLMetry: with Compat openllmetry, the names OpenLLMetry's
// instrumentations write.
func TestCompatOpenLLMetry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	spans, _ := convert(t, path, Options{Path: path, IncludeContent: true, Compat: CompatOpenLLMetry})
	first := attrs(named(spans, "chat claude-sonnet-4-5")[0])
	for k, v := range map[string]string{
		"llm.request.type": "chat", "gen_ai.system": "anthropic",
		"gen_ai.usage.prompt_tokens": "130", "gen_ai.usage.completion_tokens": "15", "llm.usage.total_tokens": "145",
		"gen_ai.usage.cache_read_input_tokens": "100", "gen_ai.usage.cache_creation_input_tokens": "20",
		"gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are terse.",
		"gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "weather in Oslo?",
		"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_use",
		"gen_ai.completion.0.tool_calls.0.name": "get_weather",
	} {
		if first[k] != v {
			t.Errorf("chat span: %s = %q, want %q", k, first[k], v)
		}
	}
	tool := attrs(one(t, spans, "execute_tool get_weather"))
	if tool["traceloop.span.kind"] != "tool" || tool["traceloop.entity.name"] != "get_weather" {
		t.Errorf("tool span: %v", tool)
	}
	if a := attrs(one(t, spans, "invoke_agent critic")); a["traceloop.span.kind"] != "agent" || a["traceloop.entity.name"] != "critic" {
		t.Errorf("agent span: %v", a)
	}
	if _, err := ParseCompat("phoenix"); err == nil {
		t.Error("ParseCompat took an unknown vocabulary")
	}
}

// TestCompatInJaeger: the names reach a real receiver as sent.
func TestCompatInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	copied := filepath.Join(t.TempDir(), "compat.jbx")
	copyWithID(t, path, copied, [16]byte{0xab, 0xcd, 3}) // a trace of its own
	o := Options{IncludeContent: true, Compat: CompatOpenInference}
	if _, err := OTLP(context.Background(), []string{copied}, Endpoint{URL: j.OTLPHTTP, Protocol: ProtocolHTTP}, o, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := convert(t, copied, o)
	got := traceOf(t, j, copied, len(want))
	compared := 0
	for _, w := range want {
		g := got[w.id.String()]
		for k, v := range attrs(w) {
			if !strings.HasPrefix(k, "llm.") && !strings.HasPrefix(k, "openinference.") && !strings.HasPrefix(k, "tool") {
				continue
			}
			if gv := g.Tag(k); gv != v {
				t.Errorf("span %s: %s = %q in Jaeger, want %q", w.name, k, gv, v)
			}
			compared++
		}
	}
	if compared < 20 {
		t.Errorf("%d OpenInference attributes compared, want the spans' whole set", compared)
	}
}

// TestContentToolParts: tool calls and their results in a request's
// history are the conventions' tool_call and tool_call_response parts
// (ids, names, arguments as JSON), for the chat, Responses and Anthropic
// APIs; before, they were text ("→ name args", "← result").
func TestContentToolParts(t *testing.T) {
	for name, body := range map[string]string{
		"chat": `{"model":"m","messages":[{"role":"user","content":"weather?"},
			{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"rain"}]}`,
		"responses": `{"model":"m","input":[{"role":"user","content":"weather?"},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"rain"}]}`,
		"anthropic": `{"model":"m","messages":[{"role":"user","content":"weather?"},
			{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"rain"}]}]}`,
	} {
		var msgs string
		for _, kv := range contentOf([]byte(body)) {
			if kv.Key == attrInputMessages {
				msgs = kv.Value.AsString()
			}
		}
		for _, want := range []string{
			`{"type":"text","content":"weather?"}`,
			`{"type":"tool_call","id":"call_1","name":"get_weather","arguments":{"city":"Oslo"}}`,
			`{"type":"tool_call_response","id":"call_1","response":"rain"}`,
		} {
			if !strings.Contains(msgs, want) {
				t.Errorf("%s: input messages %s\nlack %s", name, msgs, want)
			}
		}
		if strings.Contains(msgs, "→") || strings.Contains(msgs, "←") {
			t.Errorf("%s: tool calls as text: %s", name, msgs)
		}
	}
}
