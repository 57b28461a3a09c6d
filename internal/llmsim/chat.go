package llmsim

import (
	"encoding/json"
	"strconv"
)

// chatUsage is the usage object of an OpenAI chat completion.
type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type chatFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatToolCall struct {
	Index    *int         `json:"index,omitempty"` // streamed deltas only
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function chatFunction `json:"function"`
}

// chatMessageOut is the assistant message of a non-streamed completion.
type chatMessageOut struct {
	Role        string         `json:"role"`
	Content     *string        `json:"content"`
	Refusal     *string        `json:"refusal"`
	ToolCalls   []chatToolCall `json:"tool_calls,omitempty"`
	Annotations []any          `json:"annotations"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *struct{}      `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

type chatCompletion struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []chatChoice `json:"choices"`
	Usage             chatUsage    `json:"usage"`
	ServiceTier       string       `json:"service_tier"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// chatDelta is the delta of a streamed chunk; nil fields are left out, and
// Content is a pointer so the first chunk can carry "content":"" or null.
type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Refusal   json.RawMessage `json:"refusal,omitempty"`
	ToolCalls []chatToolCall  `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        chatDelta `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type chatChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

func (x *exchange) chatID() string { return x.ids.make("chatcmpl-", "chat", 29, alnum) }

func (x *exchange) callID(i int) string {
	return x.ids.make("call_", "call"+strconv.Itoa(i), 24, alnum)
}

func (x *exchange) chatUsage() chatUsage {
	out := x.ans.outputTokens()
	return chatUsage{PromptTokens: x.inTokens, CompletionTokens: out, TotalTokens: x.inTokens + out}
}

// chatJSON writes a non-streamed chat completion.
func (x *exchange) chatJSON() {
	msg := chatMessageOut{Role: "assistant", Annotations: []any{}}
	if x.ans.text != "" || len(x.ans.calls) == 0 {
		msg.Content = &x.ans.text
	}
	for i, tc := range x.ans.calls {
		msg.ToolCalls = append(msg.ToolCalls, chatToolCall{ID: x.callID(i), Type: "function",
			Function: chatFunction{Name: tc.name, Arguments: tc.args}})
	}
	x.em.body(marshal(chatCompletion{
		ID: x.chatID(), Object: "chat.completion", Created: x.ids.created(), Model: x.conv.model,
		Choices: []chatChoice{{Message: msg, FinishReason: x.ans.finishReason()}},
		Usage:   x.chatUsage(), ServiceTier: "default", SystemFingerprint: fingerprint(x.conv.model),
	}))
}

// chatStream writes a streamed chat completion: a role chunk, content
// pieces, each tool call's header then its arguments in pieces, a
// finish_reason chunk, a usage chunk if asked for, and [DONE].
func (x *exchange) chatStream() {
	x.em.sse()
	base := chatChunk{ID: x.chatID(), Object: "chat.completion.chunk", Created: x.ids.created(),
		Model: x.conv.model, ServiceTier: "default", SystemFingerprint: fingerprint(x.conv.model)}
	if x.conv.includeUsage {
		base.Usage = json.RawMessage("null")
	}
	send := func(d chatDelta, finish *string) bool {
		c := base
		c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
		return x.em.event("", marshal(c))
	}
	first := chatDelta{Role: "assistant", Content: json.RawMessage(`""`), Refusal: json.RawMessage("null")}
	if x.ans.text == "" && len(x.ans.calls) > 0 {
		first.Content = json.RawMessage("null")
		first.ToolCalls = []chatToolCall{x.callHeader(0)}
	}
	if !send(first, nil) {
		return
	}
	for _, piece := range chunks(x.ans.text, x.ans.pacing.chunk) {
		if !send(chatDelta{Content: marshal(piece)}, nil) {
			return
		}
	}
	for i, tc := range x.ans.calls {
		if (i > 0 || x.ans.text != "") && !send(chatDelta{ToolCalls: []chatToolCall{x.callHeader(i)}}, nil) {
			return
		}
		for _, piece := range chunks(tc.args, x.ans.pacing.chunk) {
			idx := i
			d := chatDelta{ToolCalls: []chatToolCall{{Index: &idx, Function: chatFunction{Arguments: piece}}}}
			if !send(d, nil) {
				return
			}
		}
	}
	finish := x.ans.finishReason()
	if !send(chatDelta{}, &finish) {
		return
	}
	if x.conv.includeUsage {
		c := base
		c.Choices = []chunkChoice{}
		c.Usage = marshal(x.chatUsage())
		if !x.em.event("", marshal(c)) {
			return
		}
	}
	x.em.event("", []byte("[DONE]"))
}

// callHeader is the first delta of tool call i: its id, type and name, with
// empty arguments.
func (x *exchange) callHeader(i int) chatToolCall {
	idx := i
	return chatToolCall{Index: &idx, ID: x.callID(i), Type: "function",
		Function: chatFunction{Name: x.ans.calls[i].name, Arguments: ""}}
}
