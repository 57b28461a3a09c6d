package llmwire

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
)

// AgentHeader is the request header that names the agent a model call
// comes from in a multi-agent run (AgentOf): `jukebox cost --by agent`
// groups by it and the circuit breaker keeps per-agent limits by it.
const AgentHeader = "X-Jukebox-Agent"

// AgentOf names the agent of a call: its AgentHeader, else lastTurn, the
// agent of the latest turn the run reported through jukebox's control API
// (an agent.turn frame), else "".
func AgentOf(h http.Header, lastTurn string) string {
	return cmp.Or(h.Get(AgentHeader), lastTurn)
}

// ToolUse is a tool call a model made: its id, the tool and the arguments
// (JSON, as the model wrote them).
type ToolUse struct{ ID, Name, Args string }

// ToolResult is a tool's result as a later request carries it back.
type ToolResult struct{ ID, Content string }

// ResponseToolCalls reads the tool calls of a response of the OpenAI chat
// or Responses API or the Anthropic Messages API, whole or streamed.
func ResponseToolCalls(body []byte) []ToolUse {
	var c toolCollector
	for _, obj := range jsonObjects(body) {
		if !mayCallTools(obj) {
			continue // a text delta, most of a stream: nothing to decode
		}
		var ev wireOutput
		if json.Unmarshal(obj, &ev) == nil {
			c.add(ev)
		}
	}
	return c.calls()
}

// toolMarks are the names one of which every event or answer that calls
// a tool, or carries a call's arguments, holds: chat's tool_calls, the
// Responses API's function_call items and argument deltas, Anthropic's
// tool_use blocks and their partial_json deltas.
var toolMarks = [][]byte{[]byte(`"tool_calls"`), []byte(`function_call`), []byte(`"tool_use"`), []byte(`"partial_json"`)}

// mayCallTools reports whether a JSON object may hold a tool call: one
// with none of toolMarks holds none, and need not be decoded.
func mayCallTools(obj []byte) bool {
	for _, m := range toolMarks {
		if bytes.Contains(obj, m) {
			return true
		}
	}
	return false
}

// ResponseAnswer is ResponseText and ResponseToolCalls in one reading of
// the body, for the recorder, which needs both of every answer.
func ResponseAnswer(body []byte) (text string, calls []ToolUse) {
	objs := jsonObjects(body)
	if len(objs) == 0 {
		return string(body), nil
	}
	var a assembly
	var c toolCollector
	for _, obj := range objs {
		var ev wireOutput
		if json.Unmarshal(obj, &ev) == nil {
			a.add(ev)
			c.add(ev)
		}
	}
	return a.String(), c.calls()
}

// toolCollector gathers tool calls from response events: whole ones
// (a body, a completed Responses event, an output item) and streamed
// pieces by index.
type toolCollector struct {
	whole    []ToolUse
	streamed byIndex[ToolUse]
}

func (c *toolCollector) at(i int) *ToolUse { return c.streamed.at(i) }

func (c *toolCollector) add(ev wireOutput) {
	if ev.Type == "response.completed" && ev.Response != nil {
		ev = *ev.Response
	}
	if ev.Type == "response.output_item.done" && ev.Item != nil {
		ev.Output = append(ev.Output, *ev.Item)
	}
	for _, it := range ev.Output {
		if it.Type == "function_call" {
			c.whole = append(c.whole, ToolUse{ID: it.CallID, Name: it.Name, Args: it.Arguments})
		}
	}
	for _, it := range ev.Content {
		if it.Type == "tool_use" {
			c.whole = append(c.whole, ToolUse{ID: it.ID, Name: it.Name, Args: string(it.Input)})
		}
	}
	for _, ch := range ev.Choices {
		if ch.Message != nil {
			for _, tc := range ch.Message.ToolCalls {
				if tc.Function != nil {
					c.whole = append(c.whole, ToolUse{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments})
				}
			}
		}
		if ch.Delta != nil {
			for _, tc := range ch.Delta.ToolCalls {
				u := c.at(tc.Index)
				if tc.ID != "" {
					u.ID = tc.ID
				}
				if tc.Function != nil {
					u.Name += tc.Function.Name
					u.Args += tc.Function.Arguments
				}
			}
		}
	}
	switch ev.Type {
	case "content_block_start":
		if b := ev.ContentBlock; b != nil && b.Type == "tool_use" {
			u := c.at(ev.Index)
			u.ID, u.Name = b.ID, b.Name
		}
	case "content_block_delta":
		var d wireItem
		if json.Unmarshal(ev.Delta, &d) == nil && d.PartialJSON != "" {
			c.at(ev.Index).Args += d.PartialJSON
		}
	}
}

// calls are the calls gathered: whole ones when there are any (a
// Responses stream names each call twice), else the streamed ones.
func (c *toolCollector) calls() []ToolUse {
	if len(c.whole) > 0 {
		return uniqueByID(c.whole)
	}
	var out []ToolUse
	for _, u := range c.streamed.all() {
		if u.Name != "" {
			out = append(out, *u)
		}
	}
	return out
}

func uniqueByID(uses []ToolUse) []ToolUse {
	seen := map[string]bool{}
	var out []ToolUse
	for _, u := range uses {
		if u.ID != "" && seen[u.ID] {
			continue
		}
		seen[u.ID] = true
		out = append(out, u)
	}
	return out
}

// RequestToolResults reads the tool results a request carries: chat
// messages of role tool, Responses function_call_output items, Anthropic
// tool_result blocks.
func RequestToolResults(body []byte) []ToolResult {
	var req wireRequest
	if json.Unmarshal(body, &req) != nil {
		return nil
	}
	items := req.Messages
	var input []wireItem
	if json.Unmarshal(req.Input, &input) == nil {
		items = append(items, input...)
	}
	var out []ToolResult
	for _, m := range items {
		switch {
		case m.Role == "tool" && m.ToolCallID != "":
			out = append(out, ToolResult{ID: m.ToolCallID, Content: contentText(m.Content)})
		case m.Type == "function_call_output" && m.CallID != "":
			var s string
			if json.Unmarshal(m.Output, &s) != nil {
				s = string(m.Output)
			}
			out = append(out, ToolResult{ID: m.CallID, Content: s})
		case m.Role == "user":
			var blocks []wireItem
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue
			}
			for _, b := range blocks {
				if b.Type == "tool_result" && b.ToolUseID != "" {
					out = append(out, ToolResult{ID: b.ToolUseID, Content: contentText(b.Content)})
				}
			}
		}
	}
	return out
}

// RequestMaxOutput is the most output a request asks for: its limit
// (max_tokens, max_completion_tokens or max_output_tokens; Gemini's
// generationConfig.maxOutputTokens, Bedrock Converse's
// inferenceConfig.maxTokens) times the answers it asks for (OpenAI's n,
// Gemini's candidateCount), each billed; 0 when it asks no limit. A limit
// written as a number with a fraction or an exponent (1000.0, 1e9) is the
// limit it says, rounded up, and one past int64 is the largest: the
// provider holds the answer to it (read as int64 alone, such a limit was
// lost and the call taken for one without a limit).
func RequestMaxOutput(body []byte) int64 {
	var req struct {
		MaxTokens           json.Number `json:"max_tokens"`
		MaxCompletionTokens json.Number `json:"max_completion_tokens"`
		MaxOutputTokens     json.Number `json:"max_output_tokens"`
		N                   json.Number `json:"n"`
		Gemini              struct {
			MaxOutputTokens json.Number `json:"maxOutputTokens"`
			CandidateCount  json.Number `json:"candidateCount"`
		} `json:"generationConfig"`
		Converse struct {
			MaxTokens json.Number `json:"maxTokens"`
		} `json:"inferenceConfig"`
	}
	_ = json.Unmarshal(body, &req)
	limit := max(count(req.MaxTokens), count(req.MaxCompletionTokens), count(req.MaxOutputTokens),
		count(req.Gemini.MaxOutputTokens), count(req.Converse.MaxTokens))
	answers := max(count(req.N), count(req.Gemini.CandidateCount), 1)
	if limit > math.MaxInt64/answers {
		return math.MaxInt64
	}
	return limit * answers
}

// count is a positive whole number a request gives (rounded up, at most
// MaxInt64), 0 for none, zero, a negative one or one that is not a number.
func count(n json.Number) int64 {
	if i, err := n.Int64(); err == nil {
		return max(i, 0)
	}
	f, err := n.Float64()
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange), f <= 0, math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(math.Ceil(f))
}
