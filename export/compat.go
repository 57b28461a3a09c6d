package export

import (
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// A second vocabulary the spans can carry beside the GenAI conventions'
// (Options.Compat), for backends that read only their own: the same facts
// under the names OpenInference (Arize Phoenix) and OpenLLMetry
// (Traceloop) use. Nothing is dropped: the gen_ai.* attributes stay.
const (
	// CompatOpenInference: openinference.span.kind, llm.model_name,
	// llm.token_count.*, llm.input_messages.N.message.*, input.value...
	// as the OpenInference specification (spec/semantic_conventions.md)
	// names them.
	CompatOpenInference = "openinference"
	// CompatOpenLLMetry: llm.request.type, gen_ai.system,
	// gen_ai.usage.prompt_tokens, gen_ai.prompt.N.*, traceloop.span.kind...
	// as OpenLLMetry's semantic conventions package (semconv_ai) and its
	// instrumentations name them.
	CompatOpenLLMetry = "openllmetry"
)

// Compats are the vocabularies Options.Compat takes.
var Compats = []string{CompatOpenInference, CompatOpenLLMetry}

// ParseCompat checks a --compat or --otlp-compat value ("" is none).
func ParseCompat(s string) (string, error) {
	switch s {
	case "", CompatOpenInference, CompatOpenLLMetry:
		return s, nil
	}
	return "", fmt.Errorf("%q is not a vocabulary: one of %s", s, strings.Join(Compats, ", "))
}

// compatAttrs are the attributes of vocabulary v that say what s's
// GenAI attributes say. Content goes only where s carries it (that is,
// with IncludeContent).
func compatAttrs(v string, s *span) []attribute.KeyValue {
	a := map[attribute.Key]attribute.Value{}
	for _, kv := range s.attrs {
		a[kv.Key] = kv.Value
	}
	str := func(k attribute.Key) string {
		if x, ok := a[k]; ok {
			return x.Emit()
		}
		return ""
	}
	op := str(attrOperation)
	var out []attribute.KeyValue
	add := func(k, val string) {
		if val != "" {
			out = append(out, attribute.String(k, val))
		}
	}
	addInt := func(k string, from attribute.Key) {
		if x, ok := a[from]; ok && x.Type() == attribute.INT64 {
			out = append(out, attribute.Int64(k, x.AsInt64()))
		}
	}
	in, hasIn := a[attrInputTokens]
	outTok, hasOut := a[attrOutputTokens]
	total := func(k string) {
		if hasIn || hasOut {
			out = append(out, attribute.Int64(k, in.AsInt64()+outTok.AsInt64()))
		}
	}
	model := str(attrResponseModel)
	if model == "" {
		model = str(attrRequestModel)
	}
	inputs := compatMessages(str(attrSystem), str(attrInputMessages), true)
	outputs := compatMessages("", str(attrOutputMessages), false)
	switch v {
	case CompatOpenInference:
		kind := map[string]string{opChat: "LLM", opTextComplete: "LLM", opEmbeddings: "EMBEDDING", opExecuteTool: "TOOL", opInvokeAgent: "AGENT"}[op]
		if kind == "" {
			kind = "CHAIN"
		}
		add("openinference.span.kind", kind)
		if kind == "LLM" || kind == "EMBEDDING" {
			add("llm.model_name", model)
			add("llm.provider", str(attrProvider))
			add("llm.system", str(attrProvider))
			addInt("llm.token_count.prompt", attrInputTokens)
			addInt("llm.token_count.completion", attrOutputTokens)
			total("llm.token_count.total")
			addInt("llm.token_count.prompt_details.cache_read", attrCacheRead)
			addInt("llm.token_count.prompt_details.cache_write", attrCacheCreation)
			add("llm.invocation_parameters", invocationParameters(a))
		}
		add("session.id", str(attrConversationID))
		if kind == "TOOL" {
			add("tool.name", str(attrToolName))
			add("tool_call.id", str(attrToolCallID))
			add("input.value", str(attrToolArgs))
			add("output.value", str(attrToolResult))
		}
		if kind == "AGENT" {
			add("agent.name", str(attrAgentName))
		}
		oi := msgKeys{role: "message.role", content: "message.content", calls: "message.tool_calls",
			id: "tool_call.id", name: "tool_call.function.name", args: "tool_call.function.arguments"}
		addMessages(add, "llm.input_messages", inputs, oi)
		addMessages(add, "llm.output_messages", outputs, oi)
		if x := str(attrInputMessages); x != "" && kind == "LLM" {
			add("input.value", x)
			add("input.mime_type", "application/json")
		}
		if x := str(attrOutputMessages); x != "" && kind == "LLM" {
			add("output.value", x)
			add("output.mime_type", "application/json")
		}
	case CompatOpenLLMetry:
		switch op {
		case opChat:
			add("llm.request.type", "chat")
		case opTextComplete:
			add("llm.request.type", "completion")
		case opEmbeddings:
			add("llm.request.type", "embedding")
		case opExecuteTool:
			add("traceloop.span.kind", "tool")
			add("traceloop.entity.name", str(attrToolName))
			add("traceloop.entity.input", str(attrToolArgs))
			add("traceloop.entity.output", str(attrToolResult))
		case opInvokeAgent:
			add("traceloop.span.kind", "agent")
			add("traceloop.entity.name", str(attrAgentName))
		}
		if op == opChat || op == opTextComplete || op == opEmbeddings {
			add("gen_ai.system", str(attrProvider))
			addInt("gen_ai.usage.prompt_tokens", attrInputTokens)
			addInt("gen_ai.usage.completion_tokens", attrOutputTokens)
			total("llm.usage.total_tokens")
			addInt("gen_ai.usage.cache_read_input_tokens", attrCacheRead)
			addInt("gen_ai.usage.cache_creation_input_tokens", attrCacheCreation)
		}
		ol := msgKeys{role: "role", content: "content", finish: "finish_reason", calls: "tool_calls", id: "id", name: "name", args: "arguments"}
		addMessages(add, "gen_ai.prompt", inputs, ol)
		addMessages(add, "gen_ai.completion", outputs, ol)
	}
	return out
}

// msgKeys are the keys a vocabulary flattens a message to, under
// PREFIX.N. (and its tool calls under PREFIX.N.calls.M.).
type msgKeys struct{ role, content, finish, calls, id, name, args string }

// addMessages adds ms flattened under prefix as k names them.
func addMessages(add func(k, v string), prefix string, ms []compatMessage, k msgKeys) {
	for i, m := range ms {
		p := fmt.Sprintf("%s.%d.", prefix, i)
		add(p+k.role, m.role)
		add(p+k.content, m.text)
		if k.finish != "" {
			add(p+k.finish, m.finish)
		}
		for j, c := range m.calls {
			q := fmt.Sprintf("%s%s.%d.", p, k.calls, j)
			add(q+k.id, c.ID)
			add(q+k.name, c.Name)
			add(q+k.args, c.Arguments)
		}
	}
}

// compatMessage is one message of the conventions' format, flattened as
// both vocabularies flatten it: its role, its text parts joined, its tool
// calls.
type compatMessage struct {
	role, text, finish string
	calls              []compatCall
}

type compatCall struct{ ID, Name, Arguments string }

// compatMessages reads the conventions' messages JSON (gen_ai.input.messages
// or gen_ai.output.messages), with the system instructions (their parts)
// first as a system message when given.
func compatMessages(system, messages string, input bool) []compatMessage {
	type part struct {
		Type      string          `json:"type"`
		Content   json.RawMessage `json:"content"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Response  json.RawMessage `json:"response"`
	}
	type message struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
	text := func(ps []part) (string, []compatCall) {
		var b []string
		var calls []compatCall
		for _, p := range ps {
			switch p.Type {
			case "text", "reasoning":
				var s string
				if json.Unmarshal(p.Content, &s) == nil {
					b = append(b, s)
				}
			case "tool_call":
				calls = append(calls, compatCall{ID: p.ID, Name: p.Name, Arguments: rawText(p.Arguments)})
			case "tool_call_response":
				b = append(b, rawText(p.Response))
			}
		}
		return strings.Join(b, "\n"), calls
	}
	var out []compatMessage
	if input && system != "" {
		var ps []part
		if json.Unmarshal([]byte(system), &ps) == nil {
			t, _ := text(ps)
			out = append(out, compatMessage{role: "system", text: t})
		}
	}
	var ms []message
	if messages == "" || json.Unmarshal([]byte(messages), &ms) != nil {
		return out
	}
	for _, m := range ms {
		t, calls := text(m.Parts)
		out = append(out, compatMessage{role: m.Role, text: t, finish: m.FinishReason, calls: calls})
	}
	return out
}

// rawText is a JSON value as text: a string's own text, anything else its
// JSON.
func rawText(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// invocationParameters is the request's parameters as one JSON object,
// named as the provider's API names them (llm.invocation_parameters), ""
// when the request set none.
func invocationParameters(a map[attribute.Key]attribute.Value) string {
	names := []struct {
		k    attribute.Key
		name string
	}{
		{attrReqMaxTokens, "max_tokens"}, {attrReqTemperature, "temperature"}, {attrReqTopP, "top_p"},
		{attrReqTopK, "top_k"}, {attrReqFrequencyPenalty, "frequency_penalty"}, {attrReqPresencePenalty, "presence_penalty"},
		{attrReqSeed, "seed"}, {attrReqStopSequences, "stop"}, {attrReqChoiceCount, "n"},
	}
	m := map[string]any{}
	for _, n := range names {
		if v, ok := a[n.k]; ok {
			m[n.name] = v.AsInterface()
		}
	}
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m)
	return string(b)
}
