package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestPlaybackSkipsIdle: a run that waits 30 s between two frames plays
// the wait in idleCap on screen, says how much it skipped, and i plays
// the wait as recorded.
func TestPlaybackSkipsIdle(t *testing.T) {
	path := waitingTape(t)
	for _, keep := range []bool{false, true} {
		clock := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
		o := testOptions()
		o.Now = func() time.Time { return clock }
		d := New([]string{path}, o)
		t.Cleanup(d.Close)
		d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
		if keep {
			press(d, runes("i"))
		}
		press(d, runes(" "))
		tick := func(by time.Duration) {
			clock = clock.Add(by)
			d.Update(tickMsg{gen: d.play.gen})
		}
		tick(100 * time.Millisecond)
		if got := d.tracks[0].cursor; got != 1 {
			t.Fatalf("keep %v: at 0.1 s the needle is on frame %d, want 1", keep, got)
		}
		tick(idleCap + 100*time.Millisecond)
		got := d.tracks[0].cursor
		switch {
		case !keep && got != 2:
			t.Errorf("skipping idle time: after %s on screen the needle is on frame %d, want 2 (30 s in)", idleCap+200*time.Millisecond, got)
		case !keep && !strings.Contains(d.status, "skipped 29.") || !keep && !strings.Contains(d.status, "i plays it as recorded"):
			t.Errorf("status %q", d.status)
		case keep && got != 1:
			t.Errorf("idle time played as recorded: the needle is on frame %d after 0.6 s, want 1", got)
		}
	}
}

// TestPlaybackClockRuns: while playing, the scrubber line's clock and its
// needle go on with the time played, through a stretch where the needle
// stays on one frame (a long streamed call, a wait played as recorded).
func TestPlaybackClockRuns(t *testing.T) {
	path := waitingTape(t)
	clock := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	o := testOptions()
	o.Now = func() time.Time { return clock }
	d := New([]string{path}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	press(d, runes("i"), runes(" "))
	clock = clock.Add(100 * time.Millisecond)
	d.Update(tickMsg{gen: d.play.gen})
	before := d.scrub.needle()
	clock = clock.Add(15 * time.Second)
	d.Update(tickMsg{gen: d.play.gen})
	if d.tracks[0].cursor != 1 {
		t.Fatalf("the needle is on frame %d at 15.1 s, want 1", d.tracks[0].cursor)
	}
	if info := d.scrub.info(); !strings.Contains(info, "0:15.100 / 0:30.010") {
		t.Errorf("the clock stopped at the frame's time: %s", info)
	}
	if d.scrub.needle() <= before {
		t.Errorf("the scrubber's needle stayed at cell %d", before)
	}
}

// TestPlaybackSpeedKeepsItsPlace: changing the speed (x) or the idle rule
// (i) while playing took the clock back to the needle's frame: 8.9 s into
// a long wait or a streamed call, 2x to 8x went back to 5.1 s. Playback
// goes on from where it was.
func TestPlaybackSpeedKeepsItsPlace(t *testing.T) {
	path := waitingTape(t)
	for _, c := range []struct {
		key   string
		start []tea.KeyMsg
		in    time.Duration
	}{
		{"x", []tea.KeyMsg{runes("i"), runes(" ")}, 10 * time.Second}, // the wait as recorded, 10 s in
		{"i", []tea.KeyMsg{runes(" ")}, 200 * time.Millisecond},       // before idleCap: then as recorded
	} {
		key := c.key
		clock := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
		o := testOptions()
		o.Now = func() time.Time { return clock }
		d := New([]string{path}, o)
		t.Cleanup(d.Close)
		d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
		press(d, c.start...)
		clock = clock.Add(c.in)
		d.Update(tickMsg{gen: d.play.gen})
		was := d.play.reached
		press(d, runes(key))
		clock = clock.Add(time.Second)
		d.Update(tickMsg{gen: d.play.gen})
		if got := d.play.reached; got < was+time.Second || d.tracks[0].cursor != 1 {
			t.Errorf("%s at %s of tape time: a second later playback is at %s (frame %d)", key, was, got, d.tracks[0].cursor)
		}
	}
}

// waitingTape is a run that waits 30 s between two frames of output.
func waitingTape(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wait.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.AppendAt(0, 0, tapefmt.RunStart{Argv: []string{"agent"}})
		w.AppendAt(10*time.Millisecond, 0, tapefmt.Output{Data: []byte("working\n")})
		w.AppendAt(30*time.Second, 0, tapefmt.Output{Data: []byte("done waiting\n")})
		_, err := w.AppendAt(30*time.Second+10*time.Millisecond, 0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}
