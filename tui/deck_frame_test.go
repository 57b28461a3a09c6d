package tui

import "testing"

// TestOpenAtFrame: Options.Frame (jukebox play --frame N) opens with the
// needle on that frame of the first tape, and the frame view shows it.
func TestOpenAtFrame(t *testing.T) {
	o := testOptions()
	n := 42
	o.Frame = &n
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	if got := d.tracks[0].cursor; got != 42 {
		t.Errorf("the needle is on row %d, want frame 42", got)
	}
}
