package tui

import (
	"context"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/jukebox-os/jukebox/timeline"
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

// TestStepTable: $ lays the steps and models out with their figures, s
// sorts by the next column (the largest first), r reverses, enter puts
// the needle on the step selected.
func TestStepTable(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	tl := d.tracks[0].tl
	press(d, runes("$"))
	v := d.View()
	for _, want := range []string{"steps · sorted by step ↑", "gpt-4o-mini", "tok in"} {
		if !strings.Contains(v, want) {
			t.Errorf("the table lacks %q:\n%s", want, v)
		}
	}
	if len(d.table.steps) != tl.StepCount() {
		t.Fatalf("%d step rows for %d steps", len(d.table.steps), tl.StepCount())
	}
	press(d, runes("s"), runes("s"), runes("s"), runes("s")) // calls, tokens in, tokens out, cost
	if !strings.Contains(d.View(), "sorted by cost ↓") {
		t.Errorf("four s: %s", strings.SplitN(d.View(), "\n", 5)[3])
	}
	for i := 1; i < len(d.table.steps); i++ {
		if d.table.steps[i].cost > d.table.steps[i-1].cost {
			t.Fatalf("sorted by cost, row %d costs more than row %d", i, i-1)
		}
	}
	press(d, runes("r"))
	if s := d.table.steps; s[0].cost > s[len(s)-1].cost {
		t.Error("r did not reverse the order")
	}
	press(d, tea.KeyMsg{Type: tea.KeyDown}, keyEnter)
	if want := tl.StepStart(d.table.steps[1].step); cursor(d) != want || d.pane != paneTracks {
		t.Errorf("enter on the second row: needle %d (want %d), pane %v", cursor(d), want, d.pane)
	}
}

// TestFilterAsYouType: | keeps only the rows whose frame holds what is
// typed, changing as it is typed; enter keeps the filter, esc drops it.
func TestFilterAsYouType(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	tv := d.tracks[0]
	all := tv.n()
	press(d, runes("|"))
	typeText(d, "read_fi")
	part := tv.n()
	typeText(d, "le")
	if tv.n() >= all || tv.n() < 3 {
		t.Fatalf("rows while typing: %d of %d", tv.n(), all)
	}
	if part < tv.n() {
		t.Errorf("more rows for read_file (%d) than for read_fi (%d)", tv.n(), part)
	}
	var want timeline.Sweep
	if err := tv.tl.SweepSearch(context.Background(), "read_file", -1, 1000, func(s timeline.Sweep) { want = s }); err != nil {
		t.Fatal(err)
	}
	hold := map[int]bool{}
	for _, i := range append(want.Before, want.After...) {
		hold[i] = true
	}
	for r := range tv.n() {
		i := tv.entry(r).First
		if k := tv.tl.Row(i).Kind; !hold[i] && k != timeline.KindRunStart && k != timeline.KindRunEnd {
			t.Errorf("row %d (frame %d, %s) does not hold read_file", r, i, k)
		}
	}
	if tv.n() != len(hold)+2 {
		t.Errorf("%d rows for %d frames that hold read_file (and the run's start and end)", tv.n(), len(hold))
	}
	press(d, keyEnter)
	if !strings.Contains(d.View(), `only rows holding "read_file"`) {
		t.Errorf("the status line does not say the filter:\n%s", d.View())
	}
	if d.pane != paneTracks || tv.n() >= all {
		t.Errorf("enter: pane %v, %d rows of %d", d.pane, tv.n(), all)
	}
	press(d, runes("|"), keyEsc)
	if tv.n() != all {
		t.Errorf("esc: %d rows, want every one (%d)", tv.n(), all)
	}
}
