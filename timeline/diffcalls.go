package timeline

import (
	"cmp"
	"slices"

	"github.com/jukebox-os/jukebox/diffview"
)

// orderCalls puts each run of LLM frames that follow one another in call
// order, a request before its answer. Calls an agent makes at once (a
// streamed answer still arriving when the next request goes out) land on
// the tape in whatever order the bytes came: the demo's parent wrote
// » #2 before « #1, and a fork of it the other way round. Aligned as
// written, every diff of the two would diverge at a call the fork only
// replayed. Call numbers are the order the agent made its calls in, so
// they align the same calls on both sides.
func (b *timelineBuilder) orderCalls() {
	fs := b.tl.Frames
	for i := 0; i < len(fs); i++ {
		j := i
		for j < len(fs) && b.isCall(fs[j]) {
			j++
		}
		if j-i > 2 {
			slices.SortStableFunc(fs[i:j], func(x, y diffview.Frame) int {
				return cmp.Compare(b.callKey[x.Seq], b.callKey[y.Seq])
			})
		}
		i = j
	}
}

func (b *timelineBuilder) isCall(f diffview.Frame) bool {
	_, ok := b.callKey[f.Seq]
	return ok
}
