package timeline

import (
	"context"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestViewDropsEmptySteps: a filtered or folded view has no step rule for
// a step none of whose frames it keeps (issue 33: "only errors" on a long
// tape was thousands of empty step rules).
func TestViewDropsEmptySteps(t *testing.T) {
	tl, err := Open("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	for _, o := range []ViewOptions{{Only: ClassErrors}, {Only: ClassFiles}, {Only: ClassTx}, {Fold: true, Only: ClassOutput}, {Fold: true}} {
		entries, err := tl.View(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			k, _ := tl.KindAt(e.First)
			if k != tapefmt.KindStep {
				continue
			}
			if prev := tapefmt.KindStep; i > 0 {
				prev, _ = tl.KindAt(entries[i-1].First)
				if prev != tapefmt.KindStep && prev != tapefmt.KindRunStart {
					continue
				}
			}
			t.Errorf("%+v: row %d is the rule of a step with no row (frame %d)", o, i, e.First)
		}
	}
}
