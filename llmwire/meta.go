package llmwire

import (
	"cmp"
	"encoding/json"
)

// wireMeta is Anthropic's message in a message_start event.
type wireMeta struct {
	ID         string `json:"id"`
	StopReason string `json:"stop_reason"`
}

// Answer is what a response body says, read once (ReadAnswer).
type Answer struct {
	Text   string    // as ResponseText assembles it
	Calls  []ToolUse // as ResponseToolCalls finds them
	ID     string    // the response's id
	Finish []string  // why it ended
}

// ReadAnswer reads a response body once for its text and tool calls (as
// ResponseAnswer does), its id and why it ended, for a reader that needs
// them all of every answer (the OpenTelemetry export). Finish reasons are
// one per choice of a chat completion, in choice order, as the provider
// wrote them ("stop", "tool_calls", "end_turn", "max_tokens"); for the
// Responses API, the response's status, or the reason it is incomplete.
// A body that says neither has "" and nil.
func ReadAnswer(body []byte) Answer {
	objs := jsonObjects(body)
	if len(objs) == 0 {
		return Answer{Text: string(body)}
	}
	var a assembly
	var c toolCollector
	var m metaCollector
	for _, obj := range objs {
		var ev wireOutput
		if json.Unmarshal(obj, &ev) == nil {
			a.add(ev)
			c.add(ev)
			m.add(ev)
		}
	}
	id, finish := m.result()
	return Answer{Text: a.String(), Calls: c.calls(), ID: id, Finish: finish}
}

// metaCollector gathers a response's id and finish reasons from its
// events (or its whole body).
type metaCollector struct {
	id       string
	byChoice map[int]string
	n        int
	other    string // the reason of an API without choices
}

func (m *metaCollector) add(ev wireOutput) {
	stop := ev.StopReason
	if r := ev.Response; r != nil { // Responses events carry the response
		ev.ID, ev.Status, ev.Incomplete = cmp.Or(ev.ID, r.ID), r.Status, r.Incomplete
	}
	if ev.Msg != nil {
		ev.ID, stop = cmp.Or(ev.ID, ev.Msg.ID), cmp.Or(stop, ev.Msg.StopReason)
	}
	if ev.Type == "message_delta" && len(ev.Delta) > 0 {
		var d wireMeta
		if json.Unmarshal(ev.Delta, &d) == nil {
			stop = cmp.Or(stop, d.StopReason)
		}
	}
	m.id = cmp.Or(m.id, ev.ID)
	for _, c := range ev.Choices {
		if c.Finish != "" {
			if m.byChoice == nil {
				m.byChoice = map[int]string{}
			}
			m.byChoice[c.Index] = c.Finish
			m.n = max(m.n, c.Index+1)
		}
	}
	switch {
	case stop != "":
		m.other = stop
	case ev.Incomplete != nil && ev.Incomplete.Reason != "":
		m.other = ev.Incomplete.Reason
	case ev.Status != "" && ev.Status != "in_progress" && ev.Status != "queued":
		m.other = ev.Status
	}
}

func (m *metaCollector) result() (string, []string) {
	var finish []string
	for i := range m.n {
		if r, ok := m.byChoice[i]; ok {
			finish = append(finish, r)
		}
	}
	if m.other != "" && len(finish) == 0 {
		finish = []string{m.other}
	}
	return m.id, finish
}
