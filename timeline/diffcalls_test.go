package timeline

import (
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestForDiffCallOrder: two runs that made the same overlapping calls,
// written to their tapes in different orders, do not differ.
func TestForDiffCallOrder(t *testing.T) {
	req := func(n uint64) tapefmt.Payload {
		return tapefmt.LLMRequest{Call: n, Provider: "openai", Method: "POST", Path: "/v1/chat/completions"}
	}
	resp := func(n uint64) tapefmt.Payload { return tapefmt.LLMResponse{Call: n, Status: 200} }
	orders := [][]tapefmt.Payload{
		{req(0), resp(0), req(1), req(2), resp(1), resp(2)},
		{req(0), resp(0), req(1), resp(1), req(2), resp(2)},
	}
	var tls []diffview.Timeline
	for i, o := range orders {
		path := filepath.Join(t.TempDir(), "t.jbx")
		err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
			w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
			for _, p := range o {
				if _, err := w.AppendAt(0, 0, p); err != nil {
					return err
				}
			}
			_, err := w.AppendAt(0, 0, tapefmt.RunEnd{})
			return err
		})
		if err != nil {
			t.Fatal(i, err)
		}
		tl, err := LoadForDiff(path)
		if err != nil {
			t.Fatal(err)
		}
		tls = append(tls, tl)
	}
	if dv, ok := diffview.Compare(tls[0], tls[1]).Divergence(); ok {
		t.Errorf("the same calls in another order diverge: %s", dv.Text)
	}
}
