package llmsim

import (
	"encoding/json"
	"strconv"
)

// respUsage is the usage object of a Responses API response.
type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

type respPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type respMessage struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status"`
	Content []respPart `json:"content"`
	Role    string     `json:"role"`
}

type respFunctionCall struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Status    string `json:"status"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
}

type respReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type respTextFormat struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

// respObject is a Responses API response object.
type respObject struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Background         bool              `json:"background"`
	Error              *struct{}         `json:"error"`
	IncompleteDetails  *struct{}         `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []any             `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          respReasoning     `json:"reasoning"`
	ServiceTier        string            `json:"service_tier"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	Text               respTextFormat    `json:"text"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	TopP               float64           `json:"top_p"`
	Truncation         string            `json:"truncation"`
	Usage              *respUsage        `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

// respEvent is any Responses API stream event; unused fields are left out.
type respEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int             `json:"sequence_number"`
	Response       *respObject     `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	Item           any             `json:"item,omitempty"`
	Part           *respPart       `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

func (x *exchange) respItemIDs() (msgID string, fcIDs []string) {
	msgID = x.ids.make("msg_", "resp-msg", 48, hexdig)
	for i := range x.ans.calls {
		fcIDs = append(fcIDs, x.ids.make("fc_", "resp-fc"+strconv.Itoa(i), 48, hexdig))
	}
	return msgID, fcIDs
}

// respResponse builds the response object with the given status and output.
func (x *exchange) respResponse(status string, output []any, usage *respUsage) *respObject {
	r := &respObject{
		ID: x.ids.make("resp_", "resp", 48, hexdig), Object: "response", CreatedAt: x.ids.created(),
		Status: status, Model: x.conv.model, Output: output, ParallelToolCalls: true,
		ServiceTier: "default", Store: true, Temperature: 1, ToolChoice: "auto", Tools: []any{},
		TopP: 1, Truncation: "disabled", Usage: usage, Metadata: map[string]string{},
	}
	r.Text.Format.Type = "text"
	return r
}

// respOutput is the finished output items of the answer.
func (x *exchange) respOutput() []any {
	msgID, fcIDs := x.respItemIDs()
	var out []any
	if x.ans.text != "" || len(x.ans.calls) == 0 {
		out = append(out, respMessage{ID: msgID, Type: "message", Status: "completed", Role: "assistant",
			Content: []respPart{x.respPart(x.ans.text)}})
	}
	for i, tc := range x.ans.calls {
		out = append(out, respFunctionCall{ID: fcIDs[i], Type: "function_call", Status: "completed",
			Arguments: tc.args, CallID: x.callID(i), Name: tc.name})
	}
	return out
}

func (x *exchange) respPart(text string) respPart {
	return respPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
}

func (x *exchange) respUsage() *respUsage {
	out := x.ans.outputTokens()
	return &respUsage{InputTokens: x.inTokens, OutputTokens: out, TotalTokens: x.inTokens + out}
}

// responsesJSON writes a non-streamed Responses API response.
func (x *exchange) responsesJSON() {
	x.em.body(marshal(x.respResponse("completed", x.respOutput(), x.respUsage())))
}

// responsesStream writes a streamed Responses API response: created,
// in_progress, each output item's added/delta/done events, and completed.
func (x *exchange) responsesStream() {
	x.em.sse()
	seq := 0
	send := func(ev respEvent) bool {
		ev.SequenceNumber = seq
		seq++
		return x.em.event(ev.Type, marshal(ev))
	}
	if !send(respEvent{Type: "response.created", Response: x.respResponse("in_progress", []any{}, nil)}) ||
		!send(respEvent{Type: "response.in_progress", Response: x.respResponse("in_progress", []any{}, nil)}) {
		return
	}
	final := x.respOutput()
	for i, item := range final {
		idx := i
		var ok bool
		switch it := item.(type) {
		case respMessage:
			ok = x.respStreamMessage(send, idx, it)
		case respFunctionCall:
			ok = x.respStreamCall(send, idx, it)
		}
		if !ok {
			return
		}
	}
	send(respEvent{Type: "response.completed", Response: x.respResponse("completed", final, x.respUsage())})
}

func (x *exchange) respStreamMessage(send func(respEvent) bool, idx int, done respMessage) bool {
	zero, text := 0, done.Content[0].Text
	added := done
	added.Status, added.Content = "in_progress", []respPart{}
	empty := x.respPart("")
	if !send(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: added}) ||
		!send(respEvent{Type: "response.content_part.added", ItemID: done.ID, OutputIndex: &idx, ContentIndex: &zero, Part: &empty}) {
		return false
	}
	for _, piece := range chunks(text, x.ans.pacing.chunk) {
		if !send(respEvent{Type: "response.output_text.delta", ItemID: done.ID, OutputIndex: &idx,
			ContentIndex: &zero, Delta: &piece, Logprobs: json.RawMessage("[]")}) {
			return false
		}
	}
	part := done.Content[0]
	return send(respEvent{Type: "response.output_text.done", ItemID: done.ID, OutputIndex: &idx,
		ContentIndex: &zero, Text: &text, Logprobs: json.RawMessage("[]")}) &&
		send(respEvent{Type: "response.content_part.done", ItemID: done.ID, OutputIndex: &idx, ContentIndex: &zero, Part: &part}) &&
		send(respEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: done})
}

func (x *exchange) respStreamCall(send func(respEvent) bool, idx int, done respFunctionCall) bool {
	added := done
	added.Status, added.Arguments = "in_progress", ""
	if !send(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: added}) {
		return false
	}
	for _, piece := range chunks(done.Arguments, x.ans.pacing.chunk) {
		if !send(respEvent{Type: "response.function_call_arguments.delta", ItemID: done.ID, OutputIndex: &idx, Delta: &piece}) {
			return false
		}
	}
	return send(respEvent{Type: "response.function_call_arguments.done", ItemID: done.ID, OutputIndex: &idx, Arguments: &done.Arguments}) &&
		send(respEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: done})
}
