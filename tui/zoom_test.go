package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestZoom: + gives the frame view the whole width and the body's height,
// the needle keys still move it, and + again brings the timelines back.
func TestZoom(t *testing.T) {
	for _, size := range [][2]int{{40, 12}, {80, 24}, {200, 60}} {
		d := newDeck(t, size[0], size[1], agentRun)
		press(d, runes("n"), runes("+"))
		v := d.View()
		if strings.Contains(v, "timeline ·") {
			t.Errorf("%dx%d: zoomed, the timeline is still on screen:\n%s", size[0], size[1], v)
		}
		if w := d.frame.w; w != size[0] {
			t.Errorf("%dx%d: zoomed frame view %d wide", size[0], size[1], w)
		}
		for i, l := range strings.Split(v, "\n") {
			if ansi.StringWidth(l) > size[0] {
				t.Errorf("%dx%d: line %d is %d wide", size[0], size[1], i, ansi.StringWidth(l))
			}
		}
		at := cursor(d)
		press(d, runes("n"))
		if cursor(d) == at {
			t.Errorf("%dx%d: n does not move the needle while zoomed", size[0], size[1])
		}
		press(d, runes("+"))
		if !strings.Contains(d.View(), "timeline ·") {
			t.Errorf("%dx%d: + did not give the timelines back", size[0], size[1])
		}
	}
}
