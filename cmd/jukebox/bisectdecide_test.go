package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
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
	// Each decision is named by its call's llm.request frame, as bisect
	// --check names a call (and fork --frame forks at it): the
	// llm.response frame named the call after it to fork.
	for _, d := range ds {
		f, err := tp.Frame(int(d.Frame))
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		if req, ok := p.(*tapefmt.LLMRequest); !ok || req.Call != d.Call {
			t.Errorf("call %d is named by frame %d, a %s", d.Call, d.Frame, f.Kind)
		}
	}
}

// TestBisectTwoTapesCLI: bisect --good A --bad B through the CLI: a run
// against itself decides alike (exit 0), a cut-short run differs where it
// ends, --good without --bad is exit 2 naming the flag, a tape that does
// not read is exit 3.
func TestBisectTwoTapesCLI(t *testing.T) {
	dir := sampleTapes(t)
	run, torn := filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "torn.jbx")
	out, _ := wantCode(t, ExitOK, "bisect", "--good", run, "--bad", run)
	if !strings.Contains(out, "decided alike") {
		t.Errorf("a run against itself: %q", out)
	}
	out, errs := wantCode(t, ExitOK, "bisect", "--good", run, "--bad", torn, "--json")
	if !strings.Contains(errs, "warning: "+torn+": tape has no footer") {
		t.Errorf("a torn tape's bisect says not that it was cut: %q", errs)
	}
	var two bisectTwo
	must(t, json.Unmarshal([]byte(out), &two))
	if d := two.Difference; d == nil || d.Step != two.BadSteps || d.Bad != nil || d.Good == nil {
		t.Errorf("a run cut short: %+v", two)
	}
	if _, errs := wantCode(t, ExitUsage, "bisect", "--good", run); !strings.Contains(errs, "--good needs --bad") {
		t.Errorf("--good alone: %q", errs)
	}
	if _, errs := wantCode(t, ExitBadTape, "bisect", "--good", run, "--bad", filepath.Join(dir, "seal.key")); !strings.Contains(errs, "seal.key") {
		t.Errorf("a file that is no tape: %q", errs)
	}
	// A byte flipped in its run.start (which the decisions do not read)
	// was "decided alike at all 4 steps".
	whole, err := os.ReadFile(run)
	must(t, err)
	flipped := filepath.Join(dir, "flipped.jbx")
	whole[80] ^= 0xff
	must(t, os.WriteFile(flipped, whole, 0o644))
	if _, errs := wantCode(t, ExitBadTape, "bisect", "--good", run, "--bad", flipped); !strings.Contains(errs, "flipped.jbx") {
		t.Errorf("a damaged tape: %q", errs)
	}
}

// TestBisectNamesAFailedCall: the bad run's call never reached its
// upstream; bisect said the model 'answered ""' there.
func TestBisectNamesAFailedCall(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.jbx"), filepath.Join(dir, "bad.jbx")
	if _, errs, code := jbIn(dir, nil, "record", "-o", good, "--upstream", "openai="+srv.OpenAIBaseURL(), "--", py, "-c", oneCallAgent); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	jbIn(dir, nil, "record", "-o", bad, "--upstream", "openai=http://127.0.0.1:1/v1", "--", py, "-c", oneCallAgent)
	out, errs := wantCode(t, ExitOK, "bisect", "--good", good, "--bad", bad)
	if !strings.Contains(out, "the call failed in the bad run") || !strings.Contains(out, "bad  frame 1: the call failed: ") || strings.Contains(out, `answered ""`) {
		t.Errorf("bisect of a run whose call failed:\n%s%s", out, errs)
	}
}
