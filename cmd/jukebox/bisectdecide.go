package main

// bisect --good A --bad B (issue 34, item 4, not wired yet): the first
// step where two runs decided differently, by what the model chose (the
// tools it called, their arguments, its final answer), not by bytes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// bisectDecision is what the model decided at one call: the tools it
// called (arguments as canonical JSON) and, for an answer without tool
// calls, its text.
type bisectDecision struct {
	Call  uint64       `json:"call"`
	Frame uint64       `json:"frame"`
	Tools []bisectTool `json:"tools,omitempty"`
	Text  string       `json:"text,omitempty"`
	// Error: the call failed (a refused or reset connection, an HTTP
	// error): no answer, no decision.
	Error string `json:"error,omitempty"`
}

// bisectTool is one tool call of a decision.
type bisectTool struct {
	Name string `json:"name"`
	Args string `json:"args"`
}

// bisectDifference is where two runs first decided differently: the index
// of the decision in each run and what differed (tool, arguments, final
// answer, or one run's end).
type bisectDifference struct {
	Step int             `json:"step"`
	What string          `json:"what"`
	Good *bisectDecision `json:"good,omitempty"`
	Bad  *bisectDecision `json:"bad,omitempty"`
}

// tapeDecisions reads the decisions of every answered model call on t, in
// the order of the answers, each named by its llm.request frame (the one
// bisect --check names, and jukebox fork --frame forks at).
func tapeDecisions(t *tapefmt.Tape) ([]bisectDecision, error) {
	var out []bisectDecision
	asked := map[uint64]uint64{} // a call's llm.request frame
	for f, err := range t.Frames(tapefmt.KindLLMRequest, tapefmt.KindLLMResponse) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		if req, ok := p.(*tapefmt.LLMRequest); ok {
			asked[req.Call] = f.Seq
			continue
		}
		resp := p.(*tapefmt.LLMResponse)
		var body []byte
		if !resp.Body.IsZero() {
			if body, err = t.Blob(resp.Body); err != nil {
				return nil, fmt.Errorf("frame %d: %w", f.Seq, err)
			}
		}
		text, uses := llmwire.ResponseAnswer(llmwire.DecodeBody(resp.Header, body).Text)
		d := bisectDecision{Call: resp.Call, Frame: f.Seq}
		if seq, ok := asked[resp.Call]; ok {
			d.Frame = seq
		}
		switch {
		case resp.Error != "":
			d.Error = resp.Error
		case resp.Status >= 400:
			d.Error = fmt.Sprintf("HTTP %d", resp.Status)
		}
		if d.Error != "" {
			out = append(out, d)
			continue
		}
		for _, u := range uses {
			d.Tools = append(d.Tools, bisectTool{Name: u.Name, Args: canonicalArgs(u.Args)})
		}
		if len(d.Tools) == 0 {
			d.Text = text
		}
		out = append(out, d)
	}
	return out, nil
}

// canonicalArgs is args as compact JSON with sorted keys, so that spacing
// and key order are no decision; args that are not JSON stay as they are.
func canonicalArgs(args string) string {
	var v any
	if json.Unmarshal([]byte(args), &v) != nil {
		return args
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return args
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// firstDifference is the first step where good and bad decided
// differently, nil when they decided alike throughout.
func firstDifference(good, bad []bisectDecision) *bisectDifference {
	for i := range max(len(good), len(bad)) {
		if i >= len(good) {
			return &bisectDifference{Step: i, What: "the good run ended; the bad run went on", Bad: &bad[i]}
		}
		if i >= len(bad) {
			return &bisectDifference{Step: i, What: "the bad run ended; the good run went on", Good: &good[i]}
		}
		g, b := &good[i], &bad[i]
		if what := decisionChange(g, b); what != "" {
			return &bisectDifference{Step: i, What: what, Good: g, Bad: b}
		}
	}
	return nil
}

// decisionChange names what differs between two decisions, "" if nothing.
func decisionChange(g, b *bisectDecision) string {
	names := func(d *bisectDecision) []string {
		var n []string
		for _, t := range d.Tools {
			n = append(n, t.Name)
		}
		return n
	}
	switch {
	case g.Error != "" && b.Error == "":
		return "the call failed in the good run"
	case b.Error != "" && g.Error == "":
		return "the call failed in the bad run"
	case g.Error != b.Error:
		return "the call failed otherwise"
	case !slices.Equal(names(g), names(b)):
		return "tool chosen"
	case !slices.Equal(g.Tools, b.Tools):
		return "arguments"
	case g.Text != b.Text:
		return "final answer"
	}
	return ""
}
