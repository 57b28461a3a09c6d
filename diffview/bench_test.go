package diffview

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// scatteredEdits returns a copy of tl with n edits spread over it: a third
// changed bodies, a third inserted frames, a third deleted frames.
func scatteredEdits(tl Timeline, n int, seed uint64) Timeline {
	r := rand.New(rand.NewPCG(seed, seed))
	out := tl
	out.Frames = slices.Clone(tl.Frames)
	for e := range n {
		i := r.IntN(len(out.Frames))
		switch e % 3 {
		case 0:
			out.Frames[i].Body += fmt.Sprintf(" and then edit %d", e)
		case 1:
			out.Frames = slices.Insert(out.Frames, i, Frame{Kind: "tool.call", Signature: "tool.call read_file",
				Title: "read_file", Body: fmt.Sprintf(`{"path": "notes/%d.md"}`, e)})
		default:
			out.Frames = slices.Delete(out.Frames, i, i+1)
		}
	}
	renumber(&out)
	return out
}

// BenchmarkAlign10k aligns two 10,000-frame timelines that differ by 300
// scattered edits. The budget is 200 ms.
func BenchmarkAlign10k(b *testing.B) {
	left := agentRun("left", 2000)
	right := scatteredEdits(left, 300, 1)
	b.ReportAllocs()
	for b.Loop() {
		align(left, right)
	}
}

// BenchmarkCompare10k is align plus the word diffs of the changed pairs and
// the totals: all of `jukebox diff` but loading and rendering.
func BenchmarkCompare10k(b *testing.B) {
	left := agentRun("left", 2000)
	right := scatteredEdits(left, 300, 1)
	b.ReportAllocs()
	for b.Loop() {
		Compare(left, right)
	}
}

// BenchmarkCompare10kDiverged compares two 10,000-frame timelines whose
// second halves differ in every frame body, as after a fork that changed the
// model: the worst realistic case for the whole-frame pass.
func BenchmarkCompare10kDiverged(b *testing.B) {
	left := agentRun("left", 2000)
	right := edit(left, func(fs []Frame) []Frame {
		for i := len(fs) / 2; i < len(fs); i++ {
			fs[i].Body += " (forked)"
		}
		return fs
	})
	b.ReportAllocs()
	for b.Loop() {
		Compare(left, right)
	}
}

// BenchmarkAlign10kShuffled aligns a 10,000-frame timeline with a shuffle of
// itself: an edit distance in the thousands on both passes, where the effort
// limit keeps the time bounded.
func BenchmarkAlign10kShuffled(b *testing.B) {
	left := agentRun("left", 2000)
	right := left
	right.Frames = slices.Clone(left.Frames)
	r := rand.New(rand.NewPCG(7, 7))
	r.Shuffle(len(right.Frames), func(i, j int) { right.Frames[i], right.Frames[j] = right.Frames[j], right.Frames[i] })
	b.ReportAllocs()
	for b.Loop() {
		align(left, right)
	}
}
