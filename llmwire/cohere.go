package llmwire

// Cohere's chat: v2 (message.content, usage; streamed as server-sent
// events whose message-end delta carries the usage) and v1 (text, meta;
// streamed as newline-delimited JSON ending in stream-end). Usage is
// billed_units where given (what Cohere bills), else tokens.

import (
	"encoding/json"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

type cohereCounts struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

type cohereUsageObj struct {
	Billed *cohereCounts `json:"billed_units"`
	Tokens *cohereCounts `json:"tokens"`
}

func (c *cohereUsageObj) counts() cohereCounts {
	switch {
	case c == nil:
		return cohereCounts{}
	case c.Billed != nil:
		return *c.Billed
	case c.Tokens != nil:
		return *c.Tokens
	}
	return cohereCounts{}
}

// cohereObject is a v2 or v1 answer or stream event as far as usage and
// text go.
type cohereObject struct {
	Type      string          `json:"type"`       // v2 events
	EventType string          `json:"event_type"` // v1 events
	Text      string          `json:"text"`       // v1
	Usage     *cohereUsageObj `json:"usage"`      // v2
	Meta      *cohereUsageObj `json:"meta"`       // v1
	Message   *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"` // v2
	Delta *struct {
		Usage   *cohereUsageObj `json:"usage"`
		Message *struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	} `json:"delta"` // v2 events
	Response *struct {
		Meta *cohereUsageObj `json:"meta"`
	} `json:"response"` // v1 stream-end
}

// cohereUsage reads the usage; Cohere's answers do not name the model.
func cohereUsage(objs [][]byte) tapefmt.Usage {
	var u tapefmt.Usage
	for _, obj := range objs {
		var c cohereObject
		if json.Unmarshal(obj, &c) != nil {
			continue
		}
		found := []*cohereUsageObj{c.Usage, c.Meta}
		if c.Delta != nil {
			found = append(found, c.Delta.Usage)
		}
		if c.Response != nil {
			found = append(found, c.Response.Meta)
		}
		for _, f := range found {
			n := f.counts()
			u.Input, u.Output = max(u.Input, n.Input), max(u.Output, n.Output)
		}
	}
	return u
}

// cohereText is the answer's text: a whole v2 message's or v1 text, else
// the streamed deltas (v2 content-delta, v1 text-generation).
func cohereText(objs [][]byte) string {
	var whole, streamed strings.Builder
	for _, obj := range objs {
		var c cohereObject
		if json.Unmarshal(obj, &c) != nil {
			continue
		}
		switch {
		case c.Type == "content-delta" && c.Delta != nil && c.Delta.Message != nil:
			streamed.WriteString(c.Delta.Message.Content.Text)
		case c.EventType == "text-generation":
			streamed.WriteString(c.Text)
		case c.EventType == "" && c.Type == "" && c.Message != nil:
			whole.WriteString(contentText(c.Message.Content))
		case c.EventType == "" && c.Type == "":
			whole.WriteString(c.Text)
		}
	}
	if whole.Len() > 0 {
		return whole.String()
	}
	return streamed.String()
}
