package diffview

import (
	"strings"
	"testing"
)

// TestFilesOfOneSideLeftOut: when only one run recorded its file changes
// (a fork in the Shadow Booth of a run recorded outside it), they are
// left out of that side, and the first divergence is where the runs
// differ; when both recorded them they are compared.
func TestFilesOfOneSideLeftOut(t *testing.T) {
	req := func(seq int, model string) Frame {
		return Frame{Seq: seq, Kind: "llm.request", Signature: "llm.request POST /v1/chat", Title: "POST " + model}
	}
	file := func(seq int) Frame {
		return Frame{Seq: seq, Kind: FileKind, Signature: FileKind + " out.txt", Title: "write out.txt"}
	}
	plain := Timeline{Name: "parent", Frames: []Frame{req(1, "a"), req(3, "a"), req(5, "a")}}
	fork := Timeline{Name: "fork", Files: true, Frames: []Frame{req(1, "a"), file(2), req(3, "a"), file(4), req(5, "b")}}
	r := Compare(plain, fork)
	d, ok := r.Divergence()
	if !ok || d.Left != 5 || d.Right != 5 || r.FilesLeftOut != "right" {
		t.Fatalf("divergence %+v (%v), files left out %q; want frame 5 on both sides, right", d, ok, r.FilesLeftOut)
	}
	if len(r.Right.Frames) != 3 || r.RightTotals.Frames != 5 {
		t.Errorf("right side: %d frames aligned, %d on the tape; want 3 and 5", len(r.Right.Frames), r.RightTotals.Frames)
	}
	for _, out := range []string{SideBySide(r, Options{Width: 120, Styles: PlainStyles()}), Unified(r, Options{Width: 120, Styles: PlainStyles()})} {
		// out.txt's step record and its change set: one changed path. It
		// said "2 file changes", counting each frame.
		if !strings.Contains(out, "1 changed path left out: only the right run recorded them (the left run recorded none") {
			t.Errorf("no note of the files left out:\n%s", out)
		}
	}
	if rep := r.Report(); rep.FilesLeftOut != "right" {
		t.Errorf("report: files_left_out %q", rep.FilesLeftOut)
	}
	// Swapped, the left side's are left out.
	if r := Compare(fork, plain); r.FilesLeftOut != "left" || r.First < 0 || r.Pairs[r.First].Left < 0 || r.Left.Frames[r.Pairs[r.First].Left].Seq != 5 {
		t.Errorf("swapped: files left out %q, first %d", r.FilesLeftOut, r.First)
	}
	// A booth run that changed no file: nothing left out, nothing said.
	idle := Timeline{Name: "fork", Files: true, Frames: []Frame{req(1, "a"), req(3, "a"), req(5, "a")}}
	if r := Compare(plain, idle); r.FilesLeftOut != "" || r.First >= 0 || strings.Contains(Unified(r, Options{Width: 120, Styles: PlainStyles()}), "left out") {
		t.Errorf("a booth run with no file change: files left out %q, first %d", r.FilesLeftOut, r.First)
	}
	// Both in the booth: a file only one wrote is a divergence.
	both := plain
	both.Files = true
	if r := Compare(both, fork); r.FilesLeftOut != "" || r.Pairs[r.First].Right < 0 || r.Right.Frames[r.Pairs[r.First].Right].Kind != FileKind {
		t.Errorf("both recorded files: files left out %q, first divergence %+v", r.FilesLeftOut, r.Pairs[r.First])
	}
}

// TestOutputOfOneSideLeftOut: a run jukebox did not start (jukebox serve,
// a program recording itself) has no output on its tape; against its
// replay, which has, the replay's output is left out and said so, not
// taken for the first divergence.
func TestOutputOfOneSideLeftOut(t *testing.T) {
	start := Frame{Seq: 0, Kind: "run.start", Signature: "run.start", Title: "start python agent.py"}
	out := Frame{Seq: 1, Kind: OutputKind, Signature: OutputKind + " stdout", Title: "stdout: done"}
	end := Frame{Seq: 2, Kind: "run.end", Signature: "run.end", Title: "end exit 0"}
	served := Timeline{Name: "served", NoOutput: true, Frames: []Frame{start, end}}
	replay := Timeline{Name: "replay", Frames: []Frame{start, out, end}}
	r := Compare(served, replay)
	if r.First >= 0 || r.OutputLeftOut != "right" || r.Report().OutputLeftOut != "right" {
		t.Fatalf("first divergence %d, output left out %q; want none, right", r.First, r.OutputLeftOut)
	}
	if s := SideBySide(r, Options{Width: 160, Styles: PlainStyles()}); !strings.Contains(s, "output left out: only the right run recorded it") {
		t.Errorf("no note of the output left out:\n%s", s)
	}
	if r := Compare(replay, served); r.OutputLeftOut != "left" || r.First >= 0 {
		t.Errorf("swapped: output left out %q, first %d", r.OutputLeftOut, r.First)
	}
	// Both have their output: compared as ever.
	other := replay
	other.Frames = []Frame{start, end}
	if r := Compare(other, replay); r.OutputLeftOut != "" || r.First < 0 {
		t.Errorf("both recorded output: left out %q, first %d; want the output a divergence", r.OutputLeftOut, r.First)
	}
}
