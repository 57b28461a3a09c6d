package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
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

// TestMarkerList: " lists the markers with their notes, enter puts the
// needle on the one selected, x clears it, and with none it says how to
// set one.
func TestMarkerList(t *testing.T) {
	d := newDeck(t, 100, 30, agentRun)
	press(d, runes("\""))
	if v := d.View(); !strings.Contains(v, "no markers: m sets one") {
		t.Errorf("the list with no marker:\n%s", v)
	}
	press(d, keyEsc)
	runLine(d, "5")
	runLine(d, "note the plan goes wrong here")
	runLine(d, "20")
	press(d, runes("m"))
	runLine(d, "40")
	press(d, runes("\""))
	v := d.View()
	for _, want := range []string{"markers · 2 markers", "frame 5 · the plan goes wrong here", "frame 20 ·"} {
		if !strings.Contains(v, want) {
			t.Errorf("the list lacks %q:\n%s", want, v)
		}
	}
	press(d, tea.KeyMsg{Type: tea.KeyUp}, tea.KeyMsg{Type: tea.KeyUp}, keyEnter) // the needle was at 40: the last is selected
	if cursor(d) != 5 || d.pane != paneTracks {
		t.Errorf("enter on the first marker: needle %d, pane %v", cursor(d), d.pane)
	}
	press(d, runes("\""), runes("x"))
	if tv := d.tracks[0]; tv.markers[5] || tv.notes[5] != "" || len(tv.markers) != 1 {
		t.Errorf("x: markers %v, notes %v", tv.markers, tv.notes)
	}
	press(d, keyEsc)
	if d.pane != paneTracks {
		t.Errorf("esc left the pane %v", d.pane)
	}
}
