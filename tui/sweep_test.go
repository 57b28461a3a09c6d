package tui

import (
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// longTape is a tape of about frames frames (writeTape's).
func longTape(t testing.TB, frames int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "long.jbx")
	writeTape(t, path, frames, 0)
	return path
}

// TestSearchProgressStays: a search over a long tape shows how far it has
// read and how many matches it has counted on the status line, and a key
// pressed while it runs does not take that away; when it ends, the needle
// is on the first match and the status says which match of how many.
func TestSearchProgressStays(t *testing.T) {
	d := newDeck(t, 120, 30, longTape(t, 6000))
	press(d, runes("/"))
	typeText(d, "step_00020.py")
	_, cmd := d.Update(keyEnter) // the search runs; its answers are not read yet
	if !strings.Contains(d.View(), `/"step_00020.py": `) {
		t.Fatalf("no search progress on the status line:\n%s", d.View())
	}
	press(d, keyRight)
	if !strings.Contains(d.View(), `/"step_00020.py": `) {
		t.Fatalf("a key press took the search's progress away:\n%s", d.View())
	}
	drain(d, cmd)
	if d.sweeping != nil || strings.Contains(d.View(), `/"step_00020.py": `) {
		t.Fatalf("the progress stays after the search ended:\n%s", d.View())
	}
	k, _ := d.tracks[0].tl.KindAt(cursor(d))
	if k != timeline.KindToolCall || !strings.Contains(d.status, "match 1/2") {
		t.Fatalf("needle on frame %d (%s), status %q; want the tool call of step 20, match 1/2", cursor(d), k, d.status)
	}
	press(d, runes(";"), runes(";"))
	if !strings.Contains(d.status, "match 1/2") {
		t.Fatalf("; twice from match 1 of 2: %q", d.status)
	}
	// A search for what no frame holds says so.
	press(d, runes("/"))
	typeText(d, "zebra")
	press(d, keyEnter)
	if !strings.Contains(d.status, `no frame holds "zebra"`) || d.sweeping != nil {
		t.Fatalf("no match: status %q", d.status)
	}
}

// TestSweepReportsAsItReads: a sweep over a long tape reports the first
// match and a growing count before it has read every frame, in the order
// a search reads (after the needle, then from the start), and its end
// agrees with Matches.
func TestSweepReportsAsItReads(t *testing.T) {
	tl, err := timeline.Open(longTape(t, 6000))
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	from := 3000
	var reports []timeline.Sweep
	if err := tl.SweepSearch(t.Context(), "kind:tool.call", from, 1000, func(s timeline.Sweep) { reports = append(reports, s) }); err != nil {
		t.Fatal(err)
	}
	first := reports[0]
	if first.Done() || first.FirstHit() <= from || first.Total == 0 {
		t.Fatalf("first report %+v: want a hit after frame %d before the end", first, from)
	}
	last := reports[len(reports)-1]
	frames, total, _ := tl.Matches(t.Context(), "kind:tool.call", 1000)
	if !last.Done() || last.Total != total || !slicesEqual(append(last.Before, last.After...), frames) {
		t.Fatalf("last report: %d matches, Done %v; Matches says %d", last.Total, last.Done(), total)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i].Total < reports[i-1].Total || reports[i].Scanned <= reports[i-1].Scanned {
			t.Fatalf("report %d went back: %+v after %+v", i, reports[i].Scanned, reports[i-1].Scanned)
		}
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestErrorFilterInBackground: on a long tape the error filter, which
// reads frames, is listed in the background: the rows stay usable and the
// status line says how far it is, until its rows replace them.
func TestErrorFilterInBackground(t *testing.T) {
	d := newDeck(t, 120, 30, longTape(t, slowViewFrames+2000))
	tv := d.tracks[0]
	for range 4 { // llm, tools, files, output
		press(d, runes("F"))
	}
	_, cmd := d.Update(runes("F")) // errors
	if !strings.Contains(d.View(), "listing errors: ") {
		t.Fatalf("no progress of the error filter:\n%s", d.View())
	}
	press(d, keyRight)
	if !strings.Contains(d.View(), "listing errors: ") {
		t.Fatalf("a key press took the filter's progress away:\n%s", d.View())
	}
	drain(d, cmd)
	if tv.projecting != nil || strings.Contains(d.View(), "listing errors") || !strings.Contains(d.status, "only errors") {
		t.Fatalf("after the filter ended: status %q\n%s", d.status, d.View())
	}
	if tv.n() != 2 { // run start and end: no errors, no empty step rules
		t.Fatalf("%d rows with only errors, want 2", tv.n())
	}
	_ = tea.KeyMsg{}
}
