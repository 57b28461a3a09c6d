package llmwire

// AWS Bedrock: Converse's JSON answer, ConverseStream's events, and
// InvokeModel's model-native bodies (Anthropic's Messages for anthropic.*
// models), whose InvokeModelWithResponseStream events carry each native
// event base64-encoded in "bytes". The token counts are also in
// InvokeModel's X-Amzn-Bedrock-*-Token-Count headers and in the last
// streamed event's amazon-bedrock-invocationMetrics.

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// bedrockObjects are the JSON objects of a Bedrock answer: its event
// stream's event payloads, "bytes" unwrapped, else jsonObjects(body).
func bedrockObjects(body []byte) [][]byte {
	if !isEventStream(body) {
		return jsonObjects(body)
	}
	msgs, _ := decodeEventStream(body) // a cut-off stream keeps what arrived
	var out [][]byte
	for _, m := range msgs {
		if t := m.Headers[":message-type"]; t != "" && t != "event" {
			continue
		}
		var chunk struct {
			Bytes string `json:"bytes"`
		}
		if json.Unmarshal(m.Payload, &chunk) == nil && chunk.Bytes != "" {
			if inner, err := base64.StdEncoding.DecodeString(chunk.Bytes); err == nil {
				out = append(out, inner)
			}
			continue
		}
		out = append(out, m.Payload)
	}
	return out
}

// bedrockCounts are Converse's usage and InvokeModel's invocation metrics.
type bedrockCounts struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadInputTokens"`
	CacheWrite int64 `json:"cacheWriteInputTokens"`
}

type bedrockMetrics struct {
	Input      int64 `json:"inputTokenCount"`
	Output     int64 `json:"outputTokenCount"`
	CacheRead  int64 `json:"cacheReadInputTokenCount"`
	CacheWrite int64 `json:"cacheWriteInputTokenCount"`
}

// bedrockUsage reads usage from the headers, the Converse usage objects,
// the invocation metrics and, inside InvokeModel's bodies, the model's
// own usage (Anthropic's), taking the largest of each count. Input
// excludes cache reads and writes, as Anthropic counts.
func bedrockUsage(h http.Header, objs [][]byte) (model string, u tapefmt.Usage) {
	model, u = openAIUsage(objs)
	add := func(in, out, read, write int64) {
		u.Input, u.Output = max(u.Input, in), max(u.Output, out)
		u.Cached, u.CacheWrite = max(u.Cached, read), max(u.CacheWrite, write)
	}
	add(headerCount(h, "Input"), headerCount(h, "Output"), headerCount(h, "Cache-Read-Input"), headerCount(h, "Cache-Write-Input"))
	for _, obj := range objs {
		var ev struct {
			Usage   *bedrockCounts  `json:"usage"`
			Metrics *bedrockMetrics `json:"amazon-bedrock-invocationMetrics"`
		}
		if json.Unmarshal(obj, &ev) != nil {
			continue
		}
		if c := ev.Usage; c != nil {
			add(c.Input, c.Output, c.CacheRead, c.CacheWrite)
		}
		if m := ev.Metrics; m != nil {
			add(m.Input, m.Output, m.CacheRead, m.CacheWrite)
		}
	}
	return model, u
}

// headerCount is X-Amzn-Bedrock-{what}-Token-Count, 0 when absent.
func headerCount(h http.Header, what string) int64 {
	n, _ := strconv.ParseInt(h.Get("X-Amzn-Bedrock-"+what+"-Token-Count"), 10, 64)
	return max(n, 0)
}

// bedrockBlock is a Converse content block or a ConverseStream delta.
type bedrockBlock struct {
	Text    string `json:"text"`
	ToolUse *struct {
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"toolUse"`
}

// bedrockEvent is a Converse answer or a ConverseStream event as far as
// text goes.
type bedrockEvent struct {
	Type   string `json:"type"` // set in Anthropic's events, never in Converse's
	Output *struct {
		Message struct {
			Content []bedrockBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	Delta *bedrockBlock `json:"delta"`
	Start *struct {
		ToolUse *struct {
			Name string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
}

// converseText collects the text and tool calls of Converse's answers and
// events.
type converseText struct {
	text  strings.Builder
	calls []string
	found bool // an object was Converse's
}

func (t *converseText) add(ev bedrockEvent) {
	t.found = t.found || ev.Output != nil || ev.Start != nil || (ev.Delta != nil && (ev.Delta.Text != "" || ev.Delta.ToolUse != nil))
	if ev.Output != nil {
		for _, b := range ev.Output.Message.Content {
			t.text.WriteString(b.Text)
			if b.ToolUse != nil {
				t.calls = append(t.calls, "→ "+b.ToolUse.Name+" "+compactJSON(b.ToolUse.Input))
			}
		}
	}
	if ev.Start != nil && ev.Start.ToolUse != nil {
		t.calls = append(t.calls, "→ "+ev.Start.ToolUse.Name+" ")
	}
	if ev.Delta != nil {
		t.text.WriteString(ev.Delta.Text)
		if ev.Delta.ToolUse != nil && len(t.calls) > 0 {
			var s string
			_ = json.Unmarshal(ev.Delta.ToolUse.Input, &s) // streamed input is a JSON string piece
			t.calls[len(t.calls)-1] += s
		}
	}
}

// bedrockText is a Converse answer's text and tool calls, assembled from
// ConverseStream's deltas too; InvokeModel's native bodies are read as
// their own provider's (Anthropic's) answers.
func bedrockText(objs [][]byte) string {
	var t converseText
	for _, obj := range objs {
		var ev bedrockEvent
		if json.Unmarshal(obj, &ev) == nil && ev.Type == "" {
			t.add(ev)
		}
	}
	if !t.found {
		return objectsText(objs)
	}
	return joinText(t.text.String(), t.calls)
}
