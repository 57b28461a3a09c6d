package main

import (
	"path/filepath"
	"testing"
)

// TestBisectFirstDifference: two runs are compared by their decisions:
// spacing and key order of arguments are no difference; a tool chosen,
// its arguments, the final answer and one run ending early are, at the
// first step where they happen.
func TestBisectFirstDifference(t *testing.T) {
	read := func(args string) bisectDecision {
		return bisectDecision{Tools: []bisectTool{{Name: "write_file", Args: canonicalArgs(args)}}}
	}
	good := []bisectDecision{read(`{"path": "a.txt", "content": "x"}`), {Text: "done"}}
	same := []bisectDecision{read(`{"content":"x","path":"a.txt"}`), {Text: "done"}}
	if d := firstDifference(good, same); d != nil {
		t.Errorf("bytes alone differ, reported %+v", d)
	}
	cases := []struct {
		bad  []bisectDecision
		step int
		what string
	}{
		{[]bisectDecision{{Tools: []bisectTool{{Name: "delete_file", Args: "{}"}}}, {Text: "done"}}, 0, "tool chosen"},
		{[]bisectDecision{read(`{"path": "b.txt", "content": "x"}`), {Text: "done"}}, 0, "arguments"},
		{[]bisectDecision{read(`{"path": "a.txt", "content": "x"}`), {Text: "failed"}}, 1, "final answer"},
		{[]bisectDecision{read(`{"path": "a.txt", "content": "x"}`)}, 1, "the bad run ended; the good run went on"},
	}
	for _, c := range cases {
		d := firstDifference(good, c.bad)
		if d == nil || d.Step != c.step || d.What != c.what {
			t.Errorf("want step %d %q, got %+v", c.step, c.what, d)
		}
	}
}

// TestBisectTapeDecisions: a recorded run's decisions read from its tape
// (every answered call), and a run compared with itself differs nowhere.
func TestBisectTapeDecisions(t *testing.T) {
	tp := openTape(t, filepath.Join(sampleTapes(t), "agent-run.jbx"))
	ds, err := tapeDecisions(tp)
	must(t, err)
	if len(ds) == 0 {
		t.Fatal("no decisions read from agent-run.jbx")
	}
	tools := 0
	for _, d := range ds {
		tools += len(d.Tools)
	}
	if tools == 0 && ds[len(ds)-1].Text == "" {
		t.Errorf("decisions hold neither tools nor a final answer: %+v", ds)
	}
	if d := firstDifference(ds, ds); d != nil {
		t.Errorf("a run differs from itself: %+v", d)
	}
}
