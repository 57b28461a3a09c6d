package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
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

// TestDiffBoothForkOfAPlainRun: a fork runs in the Shadow Booth by
// default, so its tape holds the file changes its agent made, while a
// parent recorded outside the booth holds none. Diffing the two found
// the first divergence at the fork's first file change, long before the
// fork point (seen with a 30-turn agent that writes a file each turn):
// the fork's file changes are now left out, and the report says so.
func TestDiffBoothForkOfAPlainRun(t *testing.T) {
	testenv.RequirePython(t)
	testenv.Short(t, "records the demo agent and forks it in the booth")
	requireBooth(t)
	work := t.TempDir()
	out, _ := wantCode(t, ExitOK, "demo", "--no-play", "--json", "--dir", filepath.Join(work, "one"))
	var demo struct{ Tape string }
	must(t, json.Unmarshal([]byte(out), &demo))
	a, err := timeline.LoadForDiff(demo.Tape)
	must(t, err)
	last := -1
	for _, f := range a.Frames {
		if f.Kind == "llm.request" {
			last = f.Seq
		}
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	t.Setenv("AGENT_MODEL", "demo-large")
	tape := filepath.Join(work, "fork.jbx")
	wantCode(t, ExitOK, "fork", "--frame", fmt.Sprint(last), "--model", "demo-small",
		"--upstream", "openai="+srv.OpenAIBaseURL(), "-o", tape, demo.Tape)
	b, err := timeline.LoadForDiff(tape)
	must(t, err)
	if a.Files || !b.Files {
		t.Fatalf("the parent ran outside the booth and the fork in it: files %v and %v", a.Files, b.Files)
	}
	r := diffview.Compare(a, b)
	if dv, ok := r.Divergence(); !ok || divergedLeft(r) < last {
		t.Errorf("fork at frame %d: first divergence before it: %s", last, dv.Text)
	}
	if r.FilesLeftOut != "right" {
		t.Errorf("FilesLeftOut = %q, want right", r.FilesLeftOut)
	}
	out, _ = wantCode(t, ExitOK, "diff", demo.Tape, tape)
	if !strings.Contains(out, " left out: only the right run recorded them") {
		t.Errorf("diff does not say the fork's file changes were left out:\n%s", out)
	}
	out, _ = wantCode(t, ExitOK, "diff", "--json", demo.Tape, tape)
	if !strings.Contains(out, `"files_left_out": "right"`) {
		t.Errorf("diff --json has no files_left_out:\n%.400s", out)
	}
}
