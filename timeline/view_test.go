package timeline_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestView: the rows of the turntable's views over the sample run (five
// steps of: request, 12 outputs, response, tool call, file write, tool
// result, clock, step rule).
func TestView(t *testing.T) {
	tl := openTimeline(t, "agent-run.jbx")
	view := func(o timeline.ViewOptions) []timeline.Entry {
		t.Helper()
		e, err := tl.View(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	folded := view(timeline.ViewOptions{Fold: true})
	if len(folded) != tl.Len()-5*11 {
		t.Errorf("folded: %d rows, want %d (each run of 12 outputs one row)", len(folded), tl.Len()-5*11)
	}
	if got := folded[3]; got != (timeline.Entry{First: 3, Last: 14}) || !got.Folded() {
		t.Errorf("folded row 3 = %+v, want frames 3-14", got)
	}
	opened := view(timeline.ViewOptions{Fold: true, Open: map[int]bool{22: true}})
	if len(opened) != len(folded)+11 || opened[timeline.EntryOf(opened, 25)] != (timeline.Entry{First: 25, Last: 25}) {
		t.Errorf("the run at 22 opened: %d rows, frame 25's row %+v", len(opened), opened[timeline.EntryOf(opened, 25)])
	}
	if got := timeline.EntryOf(folded, 9); folded[got].First != 3 {
		t.Errorf("EntryOf(folded, 9) = row %d (%+v), want the run 3-14", got, folded[got])
	}

	llm := view(timeline.ViewOptions{Only: timeline.ClassLLM})
	var kinds []tapefmt.Kind
	for _, e := range llm {
		k, _ := tl.KindAt(e.First)
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	want := []tapefmt.Kind{tapefmt.KindRunStart, tapefmt.KindRunEnd, tapefmt.KindStep, tapefmt.KindLLMRequest, tapefmt.KindLLMResponse}
	if !slices.Equal(kinds, want) || len(llm) != 2+5+10 {
		t.Errorf("only LLM: %d rows of kinds %v, want 17 of %v", len(llm), kinds, want)
	}
	// Output alone, folded: the outputs on both sides of a hidden frame
	// are one run; a step rule ends a run.
	out := view(timeline.ViewOptions{Only: timeline.ClassOutput, Fold: true})
	if len(out) != 2+5+5 {
		t.Errorf("only output, folded: %d rows, want 12 (start, end, 5 rules, 5 runs): %+v", len(out), out)
	}

	steps := view(timeline.ViewOptions{Steps: true})
	if len(steps) != 5 || steps[0].First != 0 || steps[4].Last != tl.Len()-1 {
		t.Fatalf("steps: %+v", steps)
	}
	s := tl.SummarizeStep(steps[2])
	if s.Step != 2 || s.Calls != 1 || s.Tools != 1 || s.Files != 1 || s.Tokens == 0 || s.Cost == 0 || s.Latency <= 0 || s.Errors {
		t.Errorf("step 3's summary: %+v", s)
	}
	var tokens int64
	for _, e := range steps {
		tokens += tl.SummarizeStep(e).Tokens
	}
	if total, _ := tl.Totals(tl.Len() - 1); tokens != total {
		t.Errorf("the steps' tokens add up to %d, the run's are %d", tokens, total)
	}
}

// TestViewErrors: the error filter keeps the failed call and the run's
// end, and a cancelled context stops it.
func TestViewErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "errors.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	for i := range 3000 {
		w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions"})
		status := 200
		if i == 1234 {
			status = 500
		}
		w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: status})
	}
	w.Append(0, tapefmt.RunEnd{ExitCode: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	got, err := tl.View(context.Background(), timeline.ViewOptions{Only: timeline.ClassErrors})
	if err != nil {
		t.Fatal(err)
	}
	var frames []int
	for _, e := range got {
		frames = append(frames, e.First)
	}
	if want := []int{0, 2*1234 + 2, tl.Len() - 1}; !slices.Equal(frames, want) {
		t.Errorf("only errors: frames %v, want %v (start, the 500, end)", frames, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if _, err := tl.View(ctx, timeline.ViewOptions{Only: timeline.ClassErrors}); err == nil {
		t.Error("a cancelled view of errors returned no error")
	}
}
