package timeline

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

const sampleTape = "../testdata/tapes/agent-run.jbx"

// sampleSpec is the shape of testdata/tapes/agent-run.jbx.
var sampleSpec = tapegen.Spec{Steps: 5, Chunks: 12, Model: "gpt-4o-mini"}

// writeSample writes a run like the sample tape, reshaped by s.
func writeSample(t *testing.T, name string, s tapegen.Spec) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := tapegen.WriteFile(path, s); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	return path
}

func TestForDiffSample(t *testing.T) {
	tl, err := LoadForDiff(sampleTape)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, f := range tl.Frames {
		counts[f.Kind]++
	}
	want := map[string]int{"run.start": 1, "llm.request": 5, "proc.output": 1, "llm.response": 5, "tool.call": 5,
		"file.change": 5, "tool.result": 5, "run.end": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%d %s frames, want %d (all: %v)", counts[k], k, n, counts)
		}
	}
	if len(counts) != len(want) || tl.Steps != 5 || tl.Name != "agent-run.jbx" || tl.Duration == 0 {
		t.Fatalf("kinds %v, steps %d, name %q, duration %v", counts, tl.Steps, tl.Name, tl.Duration)
	}
	req, resp, out := tl.Frames[1], tl.Frames[2], tl.Frames[len(tl.Frames)-2]
	if req.Seq != 2 || req.Signature != "llm.request POST /v1/chat/completions" ||
		!strings.HasPrefix(req.Body, "model: gpt-4o-mini\ntools: write_file, read_file\nsystem: You are a careful coding agent.") ||
		!strings.Contains(req.Body, "\nuser: Refactor the config loader and keep the tests green.\n") {
		t.Fatalf("request frame %+v", req)
	}
	if !strings.HasPrefix(out.Body, "the plan is to update config parser so that tests pass then so that") ||
		out.Seq != 3 || out.Kind != "proc.output" || len(strings.Fields(out.Body)) != 5*12 {
		t.Fatalf("merged output %+v", out)
	}
	wantResp := "the plan is to update config parser so that tests pass then \n" +
		`→ write_file {"path":"src/step_00.py","content":"# step 0\nVALUE = 0\n"}`
	if resp.Body != wantResp || resp.Tokens != 196+32 || resp.Cost <= 0 || resp.Latency == 0 ||
		resp.Signature != "llm.response /v1/chat/completions" {
		t.Fatalf("response frame %+v\nbody %q", resp, resp.Body)
	}
	later := tl.Frames[len(tl.Frames)-7]
	if later.Kind != "llm.request" || !strings.Contains(later.Body, "assistant: the plan is") ||
		!strings.Contains(later.Body, "tool: wrote 40 bytes") {
		t.Fatalf("last request does not carry the conversation: %+v", later)
	}
}

func TestDiffSampleAgainstForks(t *testing.T) {
	base, err := LoadForDiff(sampleTape)
	if err != nil {
		t.Fatal(err)
	}
	same := writeSample(t, "same.jbx", sampleSpec)
	model := sampleSpec
	model.Model = "gpt-4o"
	longer := sampleSpec
	longer.Steps = 6
	cases := []struct {
		name        string
		path        string
		op          diffview.Op
		left, right int
	}{
		{"same run", same, diffview.Same, -1, -1},
		{"changed model", writeSample(t, "model.jbx", model), diffview.Changed, 2, 2},
		{"one more step", writeSample(t, "longer.jbx", longer), diffview.OnlyRight, -1, 97},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl, err := LoadForDiff(c.path)
			if err != nil {
				t.Fatal(err)
			}
			r := diffview.Compare(base, tl)
			d, ok := r.Divergence()
			if c.op == diffview.Same {
				if ok {
					t.Fatalf("diverged: %+v", d)
				}
				return
			}
			if !ok || d.Op != c.op || d.Left != c.left || d.Right != c.right {
				t.Fatalf("divergence %+v, want %s %d/%d", d, c.op, c.left, c.right)
			}
		})
	}
}

func TestLoadForDiffRejectsNonTape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(path, []byte(strings.Repeat("not a tape\n", 20)), 0o644)
	var fe *tapefmt.FormatError
	if _, err := LoadForDiff(path); err == nil || !errors.As(err, &fe) {
		t.Fatalf("err = %v, want a FormatError", err)
	}
}

// TestOutputRaceDoesNotSplitPairs records the same exchange twice with the
// agent's output landing before the request on one tape and after it on
// the other, as pipes and the proxy race; the fork also changed the model.
// The request must pair as changed, and the output must not diverge.
func TestOutputRaceDoesNotSplitPairs(t *testing.T) {
	write := func(name, model string, outputFirst bool) string {
		var buf bytes.Buffer
		opts, _ := tapegen.Options()
		w, err := tapefmt.NewWriter(&buf, opts)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := w.PutBlob("req", []byte(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		resp, _ := w.PutBlob("resp", []byte(`{"choices":[{"message":{"role":"assistant","content":"hello"}}]}`))
		out := tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("said hello\n")}
		frames := []tapefmt.Payload{&tapefmt.RunStart{Argv: []string{"agent"}},
			&tapefmt.LLMRequest{Method: "POST", Path: "/v1/chat/completions", Model: model, Body: body},
			&tapefmt.LLMResponse{Status: 200, Body: resp, Model: model}, &out, &tapefmt.RunEnd{}}
		if outputFirst {
			frames[1], frames[2], frames[3] = &out, frames[1], frames[2]
		}
		for _, p := range frames {
			if _, err := w.Append(0, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		os.WriteFile(path, buf.Bytes(), 0o644)
		tapetest.Verify(t, path)
		return path
	}
	a, err := LoadForDiff(write("a.jbx", "gpt-4o-mini", false))
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadForDiff(write("b.jbx", "gpt-4o", true))
	if err != nil {
		t.Fatal(err)
	}
	r := diffview.Compare(a, b)
	d, ok := r.Divergence()
	if !ok || d.Op != diffview.Changed || d.Kind != "llm.request" || d.Left != 1 || d.Right != 2 {
		t.Fatalf("divergence %+v", d)
	}
	for _, p := range r.Pairs {
		if p.Op == diffview.OnlyLeft || p.Op == diffview.OnlyRight {
			t.Fatalf("unpaired frame: %+v", p)
		}
	}
}

// TestDiffviewKindNames: diffview, a leaf, names the kind it counts as a
// call itself; it must be tapefmt's name for an llm.response.
func TestDiffviewKindNames(t *testing.T) {
	if diffview.CallKind != tapefmt.KindLLMResponse.String() {
		t.Fatalf("diffview.CallKind = %q, tapefmt says %q", diffview.CallKind, tapefmt.KindLLMResponse)
	}
	if diffview.FileKind != tapefmt.KindFileChange.String() {
		t.Fatalf("diffview.FileKind = %q, tapefmt says %q", diffview.FileKind, tapefmt.KindFileChange)
	}
}

// TestDiffCountsReportedCosts: a run whose agent reports the cost of its
// turns (the Python SDK's record_agent_turn cost_usd) costs in diff what
// ls and cost say: diff showed $0.000000 beside ls's $0.0080.
func TestDiffCountsReportedCosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turns.jbx")
	tapetest.WritePayloads(t, path, &tapefmt.RunStart{Argv: []string{"agent"}},
		&tapefmt.AgentTurn{Agent: "planner", Role: "assistant", Text: "refund", CostUSD: 0.008},
		&tapefmt.AgentTurn{Agent: "planner", Role: "assistant", Text: "again", CostUSD: 0.0005}, &tapefmt.RunEnd{})
	tp := tapetest.Open(t, path)
	tl, err := ForDiff(tp, "turns")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Summarize(path, tp)
	if err != nil {
		t.Fatal(err)
	}
	s.SetCost()
	r := diffview.Compare(tl, tl)
	if got := r.LeftTotals.Cost; math.Abs(got-0.0085) > 1e-12 || math.Abs(got-s.Cost) > 1e-12 {
		t.Fatalf("diff's cost %v, ls's %v, want both 0.0085", got, s.Cost)
	}
}

// BenchmarkForDiffLongRun builds the diff timeline of a 200-step run whose
// agent echoes each streamed chunk (a frame each) and resends the
// conversation each step: an op is the whole timeline.
func BenchmarkForDiffLongRun(b *testing.B) {
	path := filepath.Join(b.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 200, Chunks: 72, Model: "gpt-4o-mini"}); err != nil {
		b.Fatal(err)
	}
	t, err := tapefmt.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	b.ReportAllocs()
	var tl diffview.Timeline
	for range b.N {
		if tl, err = ForDiff(t, "run"); err != nil {
			b.Fatal(err)
		}
	}
	// What a timeline keeps (with the open tape's caches): a long run's
	// resent conversations held apart grew as the square of its steps.
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MB")
	runtime.KeepAlive(tl)
}
