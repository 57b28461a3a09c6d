package llmwire

import (
	"cmp"
	"encoding/json"
)

// wireMeta is the part of a response body, or of one of its events, that
// says which response it is and why it ended.
type wireMeta struct {
	ID      string `json:"id"`
	Status  string `json:"status"`      // Responses: completed, incomplete, failed
	Stop    string `json:"stop_reason"` // Anthropic, whole
	Choices []struct {
		Index  int    `json:"index"`
		Finish string `json:"finish_reason"`
	} `json:"choices"` // chat, whole or a chunk
	Message  *wireMeta `json:"message"`  // Anthropic message_start
	Response *wireMeta `json:"response"` // Responses events
	Delta    *struct {
		Stop string `json:"stop_reason"`
	} `json:"delta"` // Anthropic message_delta
	Incomplete *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"` // Responses
}

// ResponseMeta reads a response's id and why it ended (finish reasons,
// one per choice of a chat completion, in choice order) from a body of the
// OpenAI chat or Responses API or the Anthropic Messages API, whole or
// streamed. Each is as the provider wrote it: "stop", "tool_calls",
// "end_turn", "max_tokens"; for the Responses API, the response's status,
// or the reason it is incomplete. A body that says neither gives "", nil.
func ResponseMeta(body []byte) (id string, finish []string) {
	byChoice := map[int]string{}
	n := 0
	var other string
	for _, obj := range jsonObjects(body) {
		var m wireMeta
		if json.Unmarshal(obj, &m) != nil {
			continue
		}
		for _, inner := range []*wireMeta{m.Message, m.Response} {
			if inner != nil {
				m.ID = cmp.Or(m.ID, inner.ID)
				if inner.Status != "" || inner.Incomplete != nil {
					m.Status, m.Incomplete = inner.Status, inner.Incomplete
				}
				m.Stop = cmp.Or(m.Stop, inner.Stop)
			}
		}
		id = cmp.Or(id, m.ID)
		for _, c := range m.Choices {
			if c.Finish != "" {
				byChoice[c.Index] = c.Finish
				n = max(n, c.Index+1)
			}
		}
		switch {
		case m.Stop != "":
			other = m.Stop
		case m.Delta != nil && m.Delta.Stop != "":
			other = m.Delta.Stop
		case m.Incomplete != nil && m.Incomplete.Reason != "":
			other = m.Incomplete.Reason
		case m.Status != "" && m.Status != "in_progress" && m.Status != "queued":
			other = m.Status
		}
	}
	for i := range n {
		if r, ok := byChoice[i]; ok {
			finish = append(finish, r)
		}
	}
	if other != "" && len(finish) == 0 {
		finish = []string{other}
	}
	return id, finish
}
