package engine_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// knownStep is one model call of a known run: what the model said and
// the tool it called, the result the next request carries back, and the
// tokens it used.
type knownStep struct {
	text           string
	tool, args     string // "" for no tool call
	result         string
	input, output  int64
	maxOutputAsked int64
}

// writeKnownRun writes a run of chat completions calls on the official
// wire format, each request carrying back the previous call's tool
// result, and returns the tape's path and each call's request frame.
func writeKnownRun(t *testing.T, steps []knownStep) (string, []uint64) {
	t.Helper()
	return writeKnownRunFrom(t, tapefmt.RunStart{Argv: []string{"agent"}}, steps)
}

// writeKnownRunFrom is writeKnownRun with the run's start given (a fork's).
func writeKnownRunFrom(t *testing.T, start tapefmt.RunStart, steps []knownStep) (string, []uint64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "known.jbx")
	var reqFrames []uint64
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, start)
		messages := []any{map[string]any{"role": "user", "content": "Do the task."}}
		for i, s := range steps {
			// The context the call's input tokens stand for, at about
			// four bytes a token, as a real request's would be.
			context := map[string]any{"role": "user", "content": strings.Repeat("word ", int(s.input)*4/5)}
			req := map[string]any{"model": "demo-large", "messages": append([]any{context}, messages...)}
			if s.maxOutputAsked > 0 {
				req["max_tokens"] = s.maxOutputAsked
			}
			rb, _ := json.Marshal(req)
			h, _ := w.PutBlob("req", rb)
			seq, err := w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: h, Size: int64(len(rb)), Model: "demo-large"})
			if err != nil {
				return err
			}
			reqFrames = append(reqFrames, seq)
			msg := map[string]any{"role": "assistant", "content": s.text}
			id := fmt.Sprint("call_", i)
			if s.tool != "" {
				msg["tool_calls"] = []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": s.tool, "arguments": s.args}}}
			}
			resp, _ := json.Marshal(map[string]any{"model": "demo-large", "choices": []any{map[string]any{"message": msg}},
				"usage": map[string]any{"prompt_tokens": s.input, "completion_tokens": s.output}})
			rh, _ := w.PutBlob("resp", resp)
			if _, err := w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: rh, Size: int64(len(resp)), Model: "demo-large",
				Usage: tapefmt.Usage{Input: s.input, Output: s.output}}); err != nil {
				return err
			}
			messages = append(messages, msg)
			if s.tool != "" {
				messages = append(messages, map[string]any{"role": "tool", "tool_call_id": id, "content": s.result})
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, reqFrames
}

// TestCheckBreakerOnKnownRuns: tapes of known runs trip where they must
// (a loop of identical tool calls, an A/B oscillation, a paraphrased
// repeat, a cost ramp), and a realistic run does not.
func TestCheckBreakerOnKnownRuns(t *testing.T) {
	t.Parallel()
	var loop, oscillation, paraphrase, ramp, realistic []knownStep
	for i := range 8 {
		loop = append(loop, knownStep{tool: "read_file", args: `{"path":"status.txt"}`, result: "pending", input: 200, output: 20})
		args := `{"path":"a.txt","content":"v1"}`
		if i%2 == 1 {
			args = `{"path":"a.txt","content":"v2"}`
		}
		// The writes come back to what they were: a loop (a result new
		// each time would be progress).
		oscillation = append(oscillation, knownStep{tool: "write_file", args: args, result: []string{"created", "created", "replaced", "replaced"}[i%4], input: 200, output: 20})
		ramp = append(ramp, knownStep{text: fmt.Sprint("step ", i), input: int64(1000 * (i + 1)), output: 100, maxOutputAsked: 100})
		realistic = append(realistic, knownStep{text: fmt.Sprintf("Step %d: I read file %d of the list and note what it does.", i, i),
			tool: "read_file", args: fmt.Sprintf(`{"path":"src/f%d.go"}`, i), result: fmt.Sprint("package f", i), input: 300, output: 40})
	}
	for _, s := range []string{
		"I could not find the configuration file, so I will search the repository for it again now.",
		"I could not find the configuration file, so I will search the whole repository for it again now.",
		"I could not find the configuration file so I'll search the repository for it again now!",
		"Found it at last.",
	} {
		paraphrase = append(paraphrase, knownStep{text: s, input: 100, output: 30})
	}
	for _, c := range []struct {
		name   string
		steps  []knownStep
		limits breaker.Limits
		rule   string
		at     int  // the call whose request frame trips, or -1
		answer bool // the trip is on that call's answer, not its request
	}{
		{"loop of identical tool calls", loop, breaker.Limits{MaxRepeat: 3}, breaker.RuleRepeat, 3, false},
		{"A/B oscillation", oscillation, breaker.Limits{MaxRepeat: 3}, breaker.RuleOscillation, 6, false},
		{"paraphrased repeat", paraphrase, breaker.Limits{MaxSemanticRepeat: 3}, breaker.RuleSemanticRepeat, 2, true},
		// demo-large: $3 in, $15 out a million; call i costs 0.003(i+1)+0.0015.
		{"cost ramp", ramp, breaker.Limits{MaxCost: 0.05}, breaker.RuleCost, 4, false},
		{"realistic run", realistic, breaker.Limits{MaxRepeat: 3, MaxSemanticRepeat: 3, MaxCost: 1}, "", -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, reqs := writeKnownRun(t, c.steps)
			tp, err := tapefmt.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer tp.Close()
			trip, err := engine.CheckBreaker(tp, c.limits)
			if err != nil {
				t.Fatal(err)
			}
			if c.at < 0 {
				if trip != nil {
					t.Fatalf("tripped: %+v", trip)
				}
				return
			}
			want := reqs[c.at]
			if c.answer {
				want++ // the response follows its request
			}
			if trip == nil || trip.Rule != c.rule || trip.Evidence[len(trip.Evidence)-1] != want {
				t.Fatalf("trip %+v, want %s at frame %d", trip, c.rule, want)
			}
		})
	}
}

// TestCheckBreakerLeavesOutWhatAForkGotFromItsParent: a fork's calls
// before its fork point were answered from the parent's tape, free, and the
// live breaker never saw them. `jukebox breaker` counted them: it named a
// trip a call earlier than the fork's own, at a cost the fork never spent.
func TestCheckBreakerLeavesOutWhatAForkGotFromItsParent(t *testing.T) {
	t.Parallel()
	var ramp []knownStep
	for range 6 {
		// demo-large: $3 in, $15 out a million: $0.0045 a call.
		ramp = append(ramp, knownStep{text: "step", input: 1000, output: 100, maxOutputAsked: 100})
	}
	start := tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeFork, Parent: &tapefmt.ParentRef{Tape: "00", Frame: 5, Call: 2}}
	path, reqs := writeKnownRunFrom(t, start, ramp)
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	// Calls 2 to 5 went live, each $0.0045 and counted before it at
	// about $0.0047 (its input counted from the request's text): three
	// fit in $0.014, the fourth not. Counting the parent's two, the cap
	// tripped on call 3.
	trip, err := engine.CheckBreaker(tp, breaker.Limits{MaxCost: 0.014})
	if err != nil {
		t.Fatal(err)
	}
	if trip == nil || trip.Rule != breaker.RuleCost || trip.Evidence[len(trip.Evidence)-1] != reqs[5] {
		t.Fatalf("want the cap to trip on call 5 (frame %d), got %+v", reqs[5], trip)
	}
	if !strings.Contains(trip.Reason, "has cost $0.0135") {
		t.Errorf("the cost named is not the fork's own: %s", trip.Reason)
	}
}
