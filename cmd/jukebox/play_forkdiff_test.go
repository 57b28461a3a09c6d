package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestDiffDivergesAtTheFork: the diff of the demo tape and a fork of it
// at any LLM call finds its first divergence at the fork point or later,
// and two recordings of the same agent against the same model agree
// (issue 33: the demo's calls #1 and #2 overlap, the parent wrote » #2
// before « #1 and the fork the other way round, so every diff began at a
// call replayed from the tape).
func TestDiffDivergesAtTheFork(t *testing.T) {
	testenv.RequirePython(t)
	testenv.Short(t, "records the demo agent and forks it")
	work := t.TempDir()
	record := func(dir string) string {
		out, _ := wantCode(t, ExitOK, "demo", "--no-play", "--json", "--dir", dir)
		var demo struct{ Tape string }
		must(t, json.Unmarshal([]byte(out), &demo))
		return demo.Tape
	}
	parent := record(filepath.Join(work, "one"))
	again := record(filepath.Join(work, "two"))
	a, err := timeline.LoadForDiff(parent)
	must(t, err)
	b, err := timeline.LoadForDiff(again)
	must(t, err)
	// Both make the same calls: every frame pairs with one on the other
	// side (what the calls answered may differ: the agent can close a
	// stream before its end).
	for _, p := range diffview.Compare(a, b).Pairs {
		if p.Left < 0 || p.Right < 0 {
			t.Errorf("two recordings of the demo: a frame stands alone: %+v", p)
		}
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	t.Setenv("AGENT_MODEL", "demo-large")
	for _, f := range a.Frames {
		if f.Kind != "llm.request" {
			continue
		}
		tape := filepath.Join(work, fmt.Sprintf("fork-%d.jbx", f.Seq))
		wantCode(t, ExitOK, "fork", "--no-booth", "--frame", fmt.Sprint(f.Seq), "--model", "demo-small",
			"--upstream", "openai="+srv.OpenAIBaseURL(), "-o", tape, parent)
		b, err := timeline.LoadForDiff(tape)
		must(t, err)
		r := diffview.Compare(a, b)
		dv, ok := r.Divergence()
		if !ok {
			t.Errorf("fork at frame %d: no divergence", f.Seq)
		} else if divergedLeft(r) < f.Seq {
			t.Errorf("fork at frame %d: first divergence before it: %s (left %d, right %d)", f.Seq, dv.Text, dv.Left, dv.Right)
		}
	}
}

// divergedLeft is the parent's frame where the diff diverges: the left
// frame of the first divergence or, when only the fork has that frame,
// the left frame after it.
func divergedLeft(r *diffview.Result) int {
	for _, p := range r.Pairs[r.First:] {
		if p.Left >= 0 {
			return r.Left.Frames[p.Left].Seq
		}
	}
	return 1 << 30
}
