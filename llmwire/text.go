package llmwire

// The text of LLM requests and responses, for the diff, the frame view and
// search: OpenAI chat and Responses requests and Anthropic Messages requests
// as "role: text" lines, and responses (whole JSON or streams) assembled
// into the assistant's text and tool calls.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// wireItem is any message, input item, output item or content part of the
// OpenAI chat and Responses APIs and the Anthropic Messages API, as far as
// its text goes.
type wireItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`      // function_call, tool_use, a tool definition
	Arguments string          `json:"arguments"` // function_call
	Input     json.RawMessage `json:"input"`     // tool_use
	Output    json.RawMessage `json:"output"`    // function_call_output
	Index     int             `json:"index"`     // a streamed chat tool call
	// Ids that pair tool calls with their results: a chat tool call's or
	// an Anthropic tool_use block's id, a Responses function_call's
	// call_id, and in results tool_call_id (chat), call_id (Responses)
	// and tool_use_id (Anthropic).
	ID         string `json:"id"`
	CallID     string `json:"call_id"`
	ToolCallID string `json:"tool_call_id"`
	ToolUseID  string `json:"tool_use_id"`
	// PartialJSON is a piece of an Anthropic tool_use block's input.
	PartialJSON string `json:"partial_json"`
	Function    *struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"` // a chat tool call or tool definition
	ToolCalls []wireItem `json:"tool_calls"`
}

// wireRequest is an LLM request body as far as its text goes.
type wireRequest struct {
	Model        string          `json:"model"`
	System       json.RawMessage `json:"system"`       // Anthropic
	Instructions json.RawMessage `json:"instructions"` // Responses
	Messages     []wireItem      `json:"messages"`     // chat, Anthropic
	Input        json.RawMessage `json:"input"`        // Responses: a string or items
	Tools        []wireItem      `json:"tools"`
	// The sampling parameters, named in requestParams.
	Temperature         json.RawMessage `json:"temperature"`
	TopP                json.RawMessage `json:"top_p"`
	MaxTokens           json.RawMessage `json:"max_tokens"`
	MaxCompletionTokens json.RawMessage `json:"max_completion_tokens"`
	MaxOutputTokens     json.RawMessage `json:"max_output_tokens"`
	Reasoning           json.RawMessage `json:"reasoning"`
	ReasoningEffort     json.RawMessage `json:"reasoning_effort"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ResponseFormat      json.RawMessage `json:"response_format"`
	Seed                json.RawMessage `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
}

// requestParams are the sampling parameters a request body shows, in order.
var requestParams = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens",
	"max_output_tokens", "reasoning", "reasoning_effort", "tool_choice", "response_format", "seed", "stop"}

// param returns the sampling parameter named name (one of requestParams).
func (r *wireRequest) param(name string) json.RawMessage {
	return map[string]json.RawMessage{"temperature": r.Temperature, "top_p": r.TopP, "max_tokens": r.MaxTokens,
		"max_completion_tokens": r.MaxCompletionTokens, "max_output_tokens": r.MaxOutputTokens,
		"reasoning": r.Reasoning, "reasoning_effort": r.ReasoningEffort, "tool_choice": r.ToolChoice,
		"response_format": r.ResponseFormat, "seed": r.Seed, "stop": r.Stop}[name]
}

// params returns the sampling parameters that are set, as "name: value" lines.
func (r *wireRequest) params() string {
	var b strings.Builder
	for _, k := range requestParams {
		if v := r.param(k); len(v) > 0 {
			fmt.Fprintf(&b, "%s: %s\n", k, compactJSON(v))
		}
	}
	return b.String()
}

// RequestText renders a request body as model, parameters, tools and one
// "role: content" line per message; a body that is not JSON stays raw.
func RequestText(body []byte) string {
	var req wireRequest
	if json.Unmarshal(body, &req) != nil {
		return string(body)
	}
	var b strings.Builder
	if req.Model != "" {
		fmt.Fprintf(&b, "model: %s\n", req.Model)
	}
	b.WriteString(req.params())
	if len(req.Tools) > 0 {
		fmt.Fprintf(&b, "tools: %s\n", toolNames(req.Tools))
	}
	for _, sys := range []json.RawMessage{req.System, req.Instructions} {
		if s := contentText(sys); s != "" {
			fmt.Fprintf(&b, "system: %s\n", s)
		}
	}
	var input string
	if json.Unmarshal(req.Input, &input) == nil {
		req.Messages = append(req.Messages, wireItem{Role: "user", Text: input, Type: "text"})
	} else {
		_ = json.Unmarshal(req.Input, &req.Messages) // absent outside the Responses API
	}
	for _, m := range req.Messages {
		b.WriteString(messageLine(m))
	}
	return b.String()
}

// toolNames lists the names of the tools a request offers.
func toolNames(tools []wireItem) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		if names[i] = t.Name; t.Function != nil {
			names[i] = t.Function.Name
		}
	}
	return strings.Join(names, ", ")
}

// messageLine renders one message or input item as "role: text".
func messageLine(m wireItem) string {
	role := m.Role
	switch {
	case role != "":
	case m.Type == "function_call":
		role = "assistant"
	case m.Type == "function_call_output":
		role = "tool"
	default:
		role = m.Type
	}
	return role + ": " + itemText(m) + "\n"
}

// Prompt is what a request body puts before the model, as the frame view
// shows it.
type Prompt struct {
	// Params are the sampling parameters set, as "name: value", in a
	// fixed order.
	Params []string
	// Tools are the names of the tools offered.
	Tools []string
	// System is the system prompt or instructions, else the first system
	// or developer message.
	System   string
	Messages []Message
}

// Message is one message or input item of a request: its role (or, for
// items without one, a role its type implies) and its text.
type Message struct {
	Role, Text string
	// Parts are the message's text, tool calls and tool results apart, as
	// the OpenTelemetry GenAI conventions' message parts hold them.
	Parts []Part
}

// Part is one part of a message: "text" (Content), "tool_call" (ID, Name,
// Arguments: the call's arguments as sent) or "tool_call_response" (ID,
// Content: the result's text).
type Part struct {
	Type, Content, ID, Name, Arguments string
}

// ParsePrompt reads the context window of a request body of the OpenAI
// chat or Responses API or the Anthropic Messages API. ok is false for a
// body that is not a JSON object.
func ParsePrompt(body []byte) (p Prompt, ok bool) {
	var req wireRequest
	var params map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil || json.Unmarshal(body, &params) != nil {
		return p, false
	}
	for _, k := range requestParams {
		if v, ok := params[k]; ok {
			p.Params = append(p.Params, k+": "+compactJSON(v))
		}
	}
	for _, t := range req.Tools {
		name := t.Name
		if t.Function != nil {
			name = t.Function.Name
		}
		p.Tools = append(p.Tools, name)
	}
	p.System = strings.TrimSpace(contentText(req.System) + "\n" + contentText(req.Instructions))
	items := req.Messages
	var input string
	if json.Unmarshal(req.Input, &input) == nil {
		items = append(items, wireItem{Role: "user", Text: input, Type: "text"})
	} else {
		var more []wireItem
		_ = json.Unmarshal(req.Input, &more) // absent outside the Responses API
		items = append(items, more...)
	}
	for _, m := range items {
		role, text, _ := strings.Cut(strings.TrimSuffix(messageLine(m), "\n"), ": ")
		if (role == "system" || role == "developer") && p.System == "" {
			p.System = text
		}
		p.Messages = append(p.Messages, Message{Role: role, Text: text, Parts: itemParts(m, true)})
	}
	return p, true
}

// itemText is the text of a message, item or content part; tool calls show
// as "→ name arguments" and tool results as "← result".
func itemText(it wireItem) string {
	switch it.Type {
	case "function_call":
		return "→ " + it.Name + " " + it.Arguments
	case "tool_use":
		return "→ " + it.Name + " " + compactJSON(it.Input)
	case "function_call_output":
		return "← " + contentText(it.Output)
	case "tool_result":
		return "← " + contentText(it.Content)
	case "text", "input_text", "output_text":
		return it.Text
	case "image_url", "input_image", "image":
		return "[image]"
	}
	parts := []string{}
	if s := contentText(it.Content); s != "" {
		parts = append(parts, s)
	}
	for _, tc := range it.ToolCalls {
		if tc.Function != nil {
			parts = append(parts, "→ "+tc.Function.Name+" "+tc.Function.Arguments)
		}
	}
	return strings.Join(parts, "\n")
}

// itemParts is a message, item or content part as parts: what itemText
// shows, with tool calls and results apart. top is a whole message (a
// chat tool message is the result of the call it names).
func itemParts(it wireItem, top bool) []Part {
	switch it.Type {
	case "function_call":
		return []Part{{Type: "tool_call", ID: cmp.Or(it.CallID, it.ID), Name: it.Name, Arguments: it.Arguments}}
	case "tool_use":
		return []Part{{Type: "tool_call", ID: it.ID, Name: it.Name, Arguments: compactJSON(it.Input)}}
	case "function_call_output":
		return []Part{{Type: "tool_call_response", ID: it.CallID, Content: contentText(it.Output)}}
	case "tool_result":
		return []Part{{Type: "tool_call_response", ID: it.ToolUseID, Content: contentText(it.Content)}}
	case "text", "input_text", "output_text":
		return []Part{{Type: "text", Content: it.Text}}
	case "image_url", "input_image", "image":
		return []Part{{Type: "text", Content: "[image]"}}
	}
	if top && it.ToolCallID != "" { // a chat tool message: the result of one call
		return []Part{{Type: "tool_call_response", ID: it.ToolCallID, Content: contentText(it.Content)}}
	}
	var parts []Part
	var s string
	var list []wireItem
	switch {
	case len(it.Content) == 0 || string(it.Content) == "null":
	case json.Unmarshal(it.Content, &s) == nil:
		if s != "" {
			parts = append(parts, Part{Type: "text", Content: s})
		}
	case json.Unmarshal(it.Content, &list) == nil:
		for _, p := range list {
			parts = append(parts, itemParts(p, false)...)
		}
	default:
		parts = append(parts, Part{Type: "text", Content: compactJSON(it.Content)})
	}
	for _, tc := range it.ToolCalls {
		if tc.Function != nil {
			parts = append(parts, Part{Type: "tool_call", ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
	}
	return parts
}

// contentText is the text of a content field: a string, a list of parts,
// or other JSON as it is.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []wireItem
	if json.Unmarshal(raw, &parts) != nil {
		return compactJSON(raw)
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = itemText(p)
	}
	return strings.Join(texts, "\n")
}

func compactJSON(raw []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, raw) != nil {
		return string(raw)
	}
	return out.String()
}

// wireOutput is a whole response body, or one event of a streamed one.
type wireOutput struct {
	Type    string `json:"type"`
	Choices []struct {
		Index   int       `json:"index"`
		Message *wireItem `json:"message"`
		Delta   *wireItem `json:"delta"`
		Finish  string    `json:"finish_reason"`
	} `json:"choices"` // chat
	// Which response this is and why it ended (ReadAnswer).
	ID         string    `json:"id"`
	Status     string    `json:"status"`      // Responses: completed, incomplete, failed
	StopReason string    `json:"stop_reason"` // Anthropic, whole
	Msg        *wireMeta `json:"message"`     // Anthropic message_start
	Incomplete *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"` // Responses
	Output       []wireItem      `json:"output"`        // Responses
	Content      []wireItem      `json:"content"`       // Anthropic
	Response     *wireOutput     `json:"response"`      // Responses events
	Item         *wireItem       `json:"item"`          // Responses output_item.done
	ContentBlock *wireItem       `json:"content_block"` // Anthropic content_block_start
	Delta        json.RawMessage `json:"delta"`         // Responses text delta or Anthropic block delta
	Index        int             `json:"index"`
}

// ResponseText assembles what the model said: its text, then its tool
// calls, from a whole JSON body or from server-sent events.
func ResponseText(body []byte) string {
	objs := jsonObjects(body)
	if len(objs) == 0 {
		return string(body)
	}
	return objectsText(objs)
}

// objectsText is ResponseText of a body's objects.
func objectsText(objs [][]byte) string {
	var a assembly
	for _, obj := range objs {
		var ev wireOutput
		if json.Unmarshal(obj, &ev) == nil {
			a.add(ev)
		}
	}
	return a.String()
}

// assembly collects a response's text and tool calls (by stream index).
type assembly struct {
	text  strings.Builder
	calls byIndex[wireItem]
	whole []string // items of a whole body or a Responses response.completed event
}

func (a *assembly) add(ev wireOutput) {
	if ev.Type == "response.completed" && ev.Response != nil {
		ev = *ev.Response
	}
	for _, it := range append(ev.Output, ev.Content...) {
		a.whole = append(a.whole, itemText(it))
	}
	for _, c := range ev.Choices {
		if c.Message != nil {
			a.whole = append(a.whole, itemText(*c.Message))
		}
		if c.Delta == nil {
			continue
		}
		a.text.WriteString(contentText(c.Delta.Content))
		for _, tc := range c.Delta.ToolCalls {
			if tc.Function != nil {
				call := a.call(tc.Index)
				call.Name += tc.Function.Name
				call.Arguments += tc.Function.Arguments
			}
		}
	}
	a.event(ev)
}

// event handles the Responses and Anthropic stream events that carry text.
func (a *assembly) event(ev wireOutput) {
	var delta wireItem
	switch ev.Type {
	case "response.output_text.delta":
		var s string
		_ = json.Unmarshal(ev.Delta, &s)
		a.text.WriteString(s)
	case "response.output_item.done":
		if ev.Item != nil && ev.Item.Type == "function_call" {
			*a.call(len(a.calls.order)) = *ev.Item
		}
	case "content_block_start":
		if ev.ContentBlock != nil && ev.ContentBlock.Type == "tool_use" {
			a.call(ev.Index).Name = ev.ContentBlock.Name
		}
	case "content_block_delta":
		_ = json.Unmarshal(ev.Delta, &delta)
		a.text.WriteString(delta.Text)
		if delta.PartialJSON != "" {
			a.call(ev.Index).Arguments += delta.PartialJSON
		}
	}
}

func (a *assembly) call(i int) *wireItem { return a.calls.at(i) }

// byIndex holds the pieces of a stream's items by their index, in the
// order the indexes first came.
type byIndex[T any] struct {
	items map[int]*T
	order []int
}

// at is the item of index i, made empty the first time.
func (b *byIndex[T]) at(i int) *T {
	if b.items == nil {
		b.items = map[int]*T{}
	}
	it, ok := b.items[i]
	if !ok {
		it = new(T)
		b.items[i], b.order = it, append(b.order, i)
	}
	return it
}

// all are the items in order.
func (b *byIndex[T]) all() []*T {
	out := make([]*T, len(b.order))
	for n, i := range b.order {
		out[n] = b.items[i]
	}
	return out
}

// String is the text, then one "→ name arguments" line per tool call; a
// whole body (or a completed Responses event) wins over streamed deltas.
func (a *assembly) String() string {
	parts := a.whole
	if len(parts) == 0 {
		parts = []string{a.text.String()}
		for _, c := range a.calls.all() {
			parts = append(parts, "→ "+c.Name+" "+c.Arguments)
		}
	}
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "\n")
}
