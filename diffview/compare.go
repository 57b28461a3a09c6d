package diffview

import (
	"fmt"
	"slices"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Result is a whole comparison: both timelines, their alignment with word
// diffs of the changed pairs, the first divergence and the totals.
type Result struct {
	Left, Right Timeline
	Pairs       []Pair
	// First is the index in Pairs of the first divergence, -1 when the
	// timelines agree frame for frame.
	First                   int
	LeftTotals, RightTotals Totals
	Delta                   Totals // right minus left
	// FilesLeftOut names the side whose file changes were left out of
	// the alignment ("left" or "right"), because the other side's run
	// did not record any: "" when both or neither did, or when that side
	// changed no file.
	FilesLeftOut string
	filesLeftOut int // how many file changes were left out
	// OutputLeftOut names the side whose output was left out of the
	// alignment ("left" or "right"): the other side's run has none on
	// its tape (Timeline.NoOutput). "" when both or neither have it.
	OutputLeftOut string
}

// Compare aligns a and b, diffs the titles and bodies of every changed
// pair word by word, and sums both sides.
//
// A run recorded outside the Shadow Booth has no file changes on its tape,
// while its fork, which runs in the booth by default, has them: when only
// one side has them they are left out of that side (Result.FilesLeftOut),
// or every such fork would diverge at its first write.
func Compare(a, b Timeline) *Result {
	var filesOut string
	var filesN, leftOut int
	switch {
	case a.Files && !b.Files:
		filesN = paths(a, FileKind)
		a, _ = without(a, FileKind)
		filesOut = "left"
	case b.Files && !a.Files:
		filesN = paths(b, FileKind)
		b, _ = without(b, FileKind)
		filesOut = "right"
	}
	if filesN == 0 {
		filesOut = "" // the booth run changed no file: nothing was left out
	}
	var outputOut string
	switch {
	case b.NoOutput && !a.NoOutput:
		if a, leftOut = without(a, OutputKind); leftOut > 0 {
			outputOut = "left"
		}
	case a.NoOutput && !b.NoOutput:
		if b, leftOut = without(b, OutputKind); leftOut > 0 {
			outputOut = "right"
		}
	}
	r := &Result{Left: a, Right: b, Pairs: align(a, b), FilesLeftOut: filesOut, filesLeftOut: filesN, OutputLeftOut: outputOut}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Op != Changed {
			continue
		}
		l, rt := a.Frames[p.Left], b.Frames[p.Right]
		if l.Title != rt.Title {
			p.Title = wordDiff(l.Title, rt.Title)
		}
		if l.Body != rt.Body {
			p.Body = wordDiff(l.Body, rt.Body)
		}
	}
	r.First = firstDivergence(r.Pairs)
	r.LeftTotals, r.RightTotals = totalsOf(a), totalsOf(b)
	r.Delta = r.RightTotals.sub(r.LeftTotals)
	return r
}

// paths counts tl's distinct frames of kind by what they are about (their
// Signature: the path, for a file change): a booth run records a path's
// change at each step and again in its change set, one change.
func paths(tl Timeline, kind string) int {
	seen := map[string]bool{}
	for _, f := range tl.Frames {
		if f.Kind == kind {
			seen[f.Signature] = true
		}
	}
	return len(seen)
}

// without is tl without its frames of kind, and how many there were.
func without(tl Timeline, kind string) (Timeline, int) {
	if tl.TapeFrames == 0 {
		tl.TapeFrames = len(tl.Frames)
	}
	n := len(tl.Frames)
	tl.Frames = slices.DeleteFunc(slices.Clone(tl.Frames), func(f Frame) bool { return f.Kind == kind })
	return tl, n - len(tl.Frames)
}

// notes say what was left out of the comparison, and why: a side's file
// changes, a side's output.
func (r *Result) notes() []string {
	var out []string
	if side := r.FilesLeftOut; side != "" {
		out = append(out, fmt.Sprintf("%s left out: only the %s run recorded them (the %s run recorded none: it ran outside the Shadow Booth, or is a replay, which answers transactions from the tape)",
			termtext.Count(r.filesLeftOut, "changed path", "changed paths"), side, otherSide(side)))
	}
	if side := r.OutputLeftOut; side != "" {
		out = append(out, fmt.Sprintf("output left out: only the %s run recorded it (jukebox did not start the %s run's process: jukebox serve, or a program recording itself)",
			side, otherSide(side)))
	}
	return out
}

// otherSide is "left" for "right" and "right" for "left".
func otherSide(side string) string {
	if side == "right" {
		return "left"
	}
	return "right"
}

// equal reports whether the timelines agree frame for frame.
func (r *Result) equal() bool { return r.First < 0 }

// Divergence names where two timelines part.
type Divergence struct {
	Pair  int    `json:"pair"` // index in Result.Pairs
	Op    Op     `json:"op"`
	Kind  string `json:"kind"`
	Left  int    `json:"left_seq"`  // frame number on the left, -1 when only the right has the frame
	Right int    `json:"right_seq"` // frame number on the right, -1 when only the left has it
	Text  string `json:"text"`      // the same, in a sentence
}

// Divergence returns the first divergence, or false when there is none.
func (r *Result) Divergence() (Divergence, bool) {
	if r.First < 0 || r.First >= len(r.Pairs) {
		return Divergence{}, false
	}
	p := r.Pairs[r.First]
	d := Divergence{Pair: r.First, Op: p.Op, Left: -1, Right: -1}
	var f Frame
	if p.Left >= 0 {
		f = r.Left.Frames[p.Left]
		d.Left = f.Seq
	}
	if p.Right >= 0 {
		f = r.Right.Frames[p.Right]
		d.Right = f.Seq
	}
	d.Kind = f.Kind
	switch p.Op {
	case OnlyLeft:
		d.Text = fmt.Sprintf("left frame %d (%s) has no match on the right, %s", d.Left, f.Kind, r.after(false))
	case OnlyRight:
		d.Text = fmt.Sprintf("right frame %d (%s) has no match on the left, %s", d.Right, f.Kind, r.after(true))
	default:
		d.Text = fmt.Sprintf("left frame %d and right frame %d (%s) differ", d.Left, d.Right, f.Kind)
	}
	return d, true
}

// after says where on the other side the first divergence falls: after the
// last frame that side has before it.
func (r *Result) after(left bool) string {
	side, tl := "right", r.Right
	if left {
		side, tl = "left", r.Left
	}
	for i := r.First - 1; i >= 0; i-- {
		idx := r.Pairs[i].Right
		if left {
			idx = r.Pairs[i].Left
		}
		if idx >= 0 {
			return fmt.Sprintf("after %s frame %d", side, tl.Frames[idx].Seq)
		}
	}
	return "before the first " + side + " frame"
}
