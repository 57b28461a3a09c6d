package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

func cursor(d *Deck) int { return d.tracks[d.focus].cursor }

func TestScrubKeys(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	steps := []struct {
		keys []tea.KeyMsg
		want int
	}{
		{[]tea.KeyMsg{keyRight, runes("l")}, 2},
		{[]tea.KeyMsg{keyLeft}, 1},
		{[]tea.KeyMsg{runes("n")}, 2},              // next LLM call
		{[]tea.KeyMsg{runes("n")}, 21},             // and the next
		{[]tea.KeyMsg{runes("N")}, 2},              // back
		{[]tea.KeyMsg{runes("t")}, 15},             // next tool call: the answer that asks for it
		{[]tea.KeyMsg{keyShiftRight}, 21},          // next step starts after step.commit 20
		{[]tea.KeyMsg{runes("L")}, 40},             // and the next
		{[]tea.KeyMsg{runes("H")}, 21},             // step back: the start of the step before
		{[]tea.KeyMsg{keyRight, keyShiftLeft}, 21}, // inside a step: back to its start
		{[]tea.KeyMsg{keyEnd}, 97},
		{[]tea.KeyMsg{keyHome}, 0},
		{[]tea.KeyMsg{runes("g"), runes("5"), runes("3"), keyEnter}, 53},
	}
	for i, s := range steps {
		press(d, s.keys...)
		if got := cursor(d); got != s.want {
			t.Fatalf("step %d: cursor %d, want %d", i, got, s.want)
		}
	}
	press(d, runes("e"))
	if cursor(d) != 53 || d.status != "no later error" {
		t.Fatalf("e on a clean tape: cursor %d status %q", cursor(d), d.status)
	}
	press(d, runes("g"), runes("9"), runes("9"), runes("9"), keyEnter)
	if cursor(d) != 53 || !strings.Contains(d.status, "frames are 0 to 97") {
		t.Fatalf("g 999: cursor %d status %q", cursor(d), d.status)
	}
}

func TestSearchAndMarkers(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	press(d, runes("/"))
	if d.pane != panePrompt || !d.keys.Quit.Enabled() {
		t.Fatal("/ did not open the prompt")
	}
	typeText(d, "step_02")
	press(d, keyEnter)
	first := cursor(d)
	if first == 0 || !strings.Contains(d.status, `"step_02" found in frame`) {
		t.Fatalf("search: cursor %d, status %q", first, d.status)
	}
	press(d, runes(";"))
	if cursor(d) <= first {
		t.Fatalf("; went from %d to %d", first, cursor(d))
	}
	press(d, runes(","))
	if cursor(d) != first {
		t.Fatalf(", went back to %d, want %d", cursor(d), first)
	}
	press(d, runes("/"))
	typeText(d, "zzz-nothing")
	press(d, keyEnter)
	if cursor(d) != first || !strings.Contains(d.status, "no frame holds") {
		t.Fatalf("failed search moved to %d: %q", cursor(d), d.status)
	}

	if d.tracks[0].keys.NextMark.Enabled() {
		t.Fatal("' enabled without markers")
	}
	press(d, runes("g"), runes("9"), keyEnter, runes("m"), runes("g"), runes("3"), runes("0"), keyEnter, runes("m"), keyHome)
	if !d.tracks[0].keys.NextMark.Enabled() {
		t.Fatal("' disabled with markers")
	}
	press(d, runes("'"))
	if cursor(d) != 9 {
		t.Fatalf("' went to %d", cursor(d))
	}
	press(d, runes("'"), runes("'"))
	if cursor(d) != 9 {
		t.Fatalf("' does not wrap: %d", cursor(d))
	}
}

func TestPlayback(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	now := d.o.Now()
	d.o.Now = func() time.Time { return now }
	_, cmd := d.Update(runes(" "))
	if !d.play.playing || cmd == nil {
		t.Fatal("space did not start playing")
	}
	now = now.Add(40 * time.Millisecond) // from frame 0 at 3 ms; frame 13 is at 42 ms
	d.Update(tickMsg{d.play.gen})
	if c := cursor(d); c != 13 {
		t.Fatalf("after 40 ms of play the needle is at %d, want 13", c)
	}
	// the frame view follows the call being streamed: the request of call #0 at frame 2
	if d.frame.seq != 2 || d.frame.stream == nil {
		t.Fatalf("frame view shows %d (stream %v) while playing through call #0", d.frame.seq, d.frame.stream)
	}
	press(d, runes("x")) // 2x
	now = now.Add(10 * time.Millisecond)
	d.Update(tickMsg{d.play.gen})
	if c := cursor(d); c != 20 { // 43 ms reached + 20 ms of tape (not from frame 13's 42 ms)
		t.Fatalf("at 2x the needle is at %d, want 20", c)
	}
	press(d, runes(" "))
	if d.play.playing || d.frame.stream != nil {
		t.Fatal("space did not pause")
	}
	gen := d.play.gen
	now = now.Add(time.Second)
	d.Update(tickMsg{gen})
	if cursor(d) != 20 {
		t.Fatal("a tick moved the needle while paused")
	}
}

func TestHelpShowsOnlyWorkingKeys(t *testing.T) {
	d := newDeck(t, 160, 48, agentRun)
	help := d.helpLine()
	if strings.Contains(help, "diff") || strings.Contains(help, "stop fork") || !strings.Contains(help, "fork here") {
		t.Fatalf("help line: %s", help)
	}
	press(d, keyEnd) // after the last LLM call there is nothing to fork at
	if strings.Contains(d.helpLine(), "fork here") {
		t.Fatal("fork offered after the last LLM call")
	}
	press(d, runes("?"))
	full := d.View()
	press(d, tea.KeyMsg{Type: tea.KeyPgDown}) // the help scrolls where it is taller than the screen
	full += d.View()
	for _, want := range []string{"go to frame", "command line", "next/prev tool call", "next/prev error", "marker", "play", "raw bytes"} {
		if !strings.Contains(full, want) {
			t.Errorf("full help lacks %q", want)
		}
	}
}

func TestMouse(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	tr, _ := d.places()
	d.Update(tea.MouseMsg{X: 10, Y: tr[0].y + 4, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if cursor(d) != 3 {
		t.Fatalf("click on the 4th row selected %d", cursor(d))
	}
	d.Update(tea.MouseMsg{X: 10, Y: tr[0].y + 2, Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if cursor(d) != 4 {
		t.Fatalf("wheel down went to %d", cursor(d))
	}
	d.Update(tea.MouseMsg{X: 78, Y: headerRows, Action: tea.MouseActionPress, Button: tea.MouseButtonLeft})
	if cursor(d) != 97 {
		t.Fatalf("click at the end of the bar went to %d", cursor(d))
	}
}

func TestOpenErrors(t *testing.T) {
	d := newDeck(t, 80, 24, notATape)
	if d.Err() == nil || !strings.Contains(d.View(), "does not open") || !strings.Contains(d.View(), "offset") {
		t.Fatalf("not a tape: %v\n%s", d.Err(), d.View())
	}
	if _, cmd := d.Update(runes("q")); cmd == nil {
		t.Fatal("q does not quit the error screen")
	}
	d = newDeck(t, 80, 24, tornTape)
	if d.Err() != nil || !strings.Contains(d.View(), "dropped 13 frames (1620 bytes)") {
		t.Fatalf("torn tape: %v\n%s", d.Err(), d.View())
	}
}

// TestRunesTogether: keys typed faster than the terminal is read arrive as
// one message; each still counts, and text after "/" goes to the prompt.
func TestRunesTogether(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	press(d, runes("nn"))
	if cursor(d) != 21 {
		t.Fatalf(`"nn" went to %d, want 21`, cursor(d))
	}
	press(d, runes("/uni"))
	if d.pane != panePrompt || d.prompt.input.Value() != "uni" {
		t.Fatalf(`"/uni": pane %d, prompt %q`, d.pane, d.prompt.input.Value())
	}
}
