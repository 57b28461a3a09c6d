package tapefmt_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestFramesInAgreesWithFrame: FramesIn gives every frame of a stretch as
// Frame does, whatever stretch is asked (clamped to the tape), and a
// damaged frame in a stretch fails as Frame fails.
func TestFramesInAgreesWithFrame(t *testing.T) {
	b, err := os.ReadFile("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open("../testdata/tapes/agent-run.jbx")
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	for _, sp := range [][2]int{{0, tp.Len()}, {-3, 5}, {7, 8}, {tp.Len() - 2, tp.Len() + 9}, {4, 4}} {
		want := sp[0]
		if want < 0 {
			want = 0
		}
		tp.FramesIn(sp[0], sp[1], func(k int, f tapefmt.Frame, err error) bool {
			g, gerr := tp.Frame(k)
			if k != want || err != nil || gerr != nil || !bytes.Equal(f.Payload, g.Payload) || f.Kind != g.Kind || f.Offset != g.Offset {
				t.Fatalf("%v: frame %d (want %d): %v / %v", sp, k, want, err, gerr)
			}
			want++
			return true
		})
		if end := min(max(sp[1], 0), tp.Len()); want != max(end, max(sp[0], 0)) {
			t.Errorf("%v: stopped at %d", sp, want)
		}
	}
	// One payload byte changed: FramesIn and Frame both say its CRC fails.
	f5, _ := tp.Frame(5)
	b[f5.Offset+24] ^= 1
	path := filepath.Join(t.TempDir(), "bad.jbx")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	bad, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, ferr := bad.Frame(5)
	var got error
	bad.FramesIn(0, 10, func(k int, _ tapefmt.Frame, err error) bool {
		if k == 5 {
			got = err
		}
		return true
	})
	if ferr == nil || got == nil || got.Error() != ferr.Error() {
		t.Fatalf("damaged frame 5: FramesIn says %v, Frame %v", got, ferr)
	}
}
