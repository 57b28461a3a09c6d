package tui

import (
	"testing"

	"github.com/jukebox-os/jukebox/timeline"
)

// TestEveryKindHasAGlyph: each frame kind the format knows has a sign of
// its own on the timeline, one cell wide; "?" is for kinds a later
// release adds. The control API's exchanges and the workspace snapshot
// showed as "?" beside every SDK transaction and every --snapshot run.
func TestEveryKindHasAGlyph(t *testing.T) {
	for k := timeline.Kind(1); k < 255; k++ {
		if !k.Known() {
			continue
		}
		g := Glyph(k)
		if g == "?" {
			t.Errorf("%s has no glyph", k)
			continue
		}
		if w := visibleWidth(g); w != 1 {
			t.Errorf("%s's glyph %q is %d cells wide", k, g, w)
		}
	}
}
