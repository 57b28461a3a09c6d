package llmsim

import (
	"encoding/json"
	"strconv"
)

// anthropicUsage is the usage object of an Anthropic message.
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int    `json:"output_tokens"`
	ServiceTier  string `json:"service_tier"`
}

// anthropicContent is a text or tool_use content block.
type anthropicContent struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthropicMessage struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Role         string             `json:"role"`
	Model        string             `json:"model"`
	Content      []anthropicContent `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsage     `json:"usage"`
}

// anthropicEvent is any Messages API stream event; unused fields are left out.
type anthropicEvent struct {
	Type         string            `json:"type"`
	Message      *anthropicMessage `json:"message,omitempty"`
	Index        *int              `json:"index,omitempty"`
	ContentBlock *anthropicContent `json:"content_block,omitempty"`
	Delta        any               `json:"delta,omitempty"`
	Usage        *struct {
		OutputTokens int `json:"output_tokens"`
	} `json:"usage,omitempty"`
}

type textDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type inputJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type stopDelta struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

func (x *exchange) stopReason() string {
	if len(x.ans.calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// anthropicBlocks is the finished content of the answer.
func (x *exchange) anthropicBlocks() []anthropicContent {
	var blocks []anthropicContent
	if x.ans.text != "" || len(x.ans.calls) == 0 {
		text := x.ans.text
		blocks = append(blocks, anthropicContent{Type: "text", Text: &text})
	}
	for i, tc := range x.ans.calls {
		blocks = append(blocks, anthropicContent{Type: "tool_use", Name: tc.name, Input: json.RawMessage(tc.args),
			ID: x.ids.make("toolu_01", "toolu"+strconv.Itoa(i), 22, base58)})
	}
	return blocks
}

func (x *exchange) anthropicMessage(content []anthropicContent, stop *string, outTokens int) *anthropicMessage {
	return &anthropicMessage{
		ID: x.ids.make("msg_01", "msg", 22, base58), Type: "message", Role: "assistant", Model: x.conv.model,
		Content: content, StopReason: stop,
		Usage: anthropicUsage{InputTokens: x.inTokens, OutputTokens: outTokens, ServiceTier: "standard"},
	}
}

// messagesJSON writes a non-streamed Anthropic message.
func (x *exchange) messagesJSON() {
	stop := x.stopReason()
	x.em.body(marshal(x.anthropicMessage(x.anthropicBlocks(), &stop, x.ans.outputTokens())))
}

// messagesStream writes a streamed Anthropic message: message_start, each
// block's start/deltas/stop (a ping after the first start), message_delta
// with the stop reason and usage, and message_stop.
func (x *exchange) messagesStream() {
	x.em.sse()
	send := func(ev anthropicEvent) bool { return x.em.event(ev.Type, marshal(ev)) }
	if !send(anthropicEvent{Type: "message_start", Message: x.anthropicMessage([]anthropicContent{}, nil, 1)}) {
		return
	}
	for i, b := range x.anthropicBlocks() {
		if !x.anthropicStreamBlock(send, i, b) {
			return
		}
	}
	md := anthropicEvent{Type: "message_delta", Delta: stopDelta{StopReason: x.stopReason()}}
	md.Usage = &struct {
		OutputTokens int `json:"output_tokens"`
	}{x.ans.outputTokens()}
	if send(md) {
		send(anthropicEvent{Type: "message_stop"})
	}
}

func (x *exchange) anthropicStreamBlock(send func(anthropicEvent) bool, idx int, done anthropicContent) bool {
	start := done
	var pieces []string
	var delta func(string) any
	if done.Type == "text" {
		empty := ""
		start.Text, pieces = &empty, chunks(*done.Text, x.ans.pacing.chunk)
		delta = func(p string) any { return textDelta{Type: "text_delta", Text: p} }
	} else {
		start.Input = json.RawMessage("{}")
		pieces = append([]string{""}, chunks(string(done.Input), x.ans.pacing.chunk)...)
		delta = func(p string) any { return inputJSONDelta{Type: "input_json_delta", PartialJSON: p} }
	}
	if !send(anthropicEvent{Type: "content_block_start", Index: &idx, ContentBlock: &start}) {
		return false
	}
	if idx == 0 && !x.em.event("ping", []byte(`{"type": "ping"}`)) {
		return false
	}
	for _, p := range pieces {
		if !send(anthropicEvent{Type: "content_block_delta", Index: &idx, Delta: delta(p)}) {
			return false
		}
	}
	return send(anthropicEvent{Type: "content_block_stop", Index: &idx})
}
