package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/timeline"
)

// runLine types a command line and runs it.
func runLine(d *Deck, line string) {
	press(d, runes(":"))
	typeText(d, line)
	press(d, keyEnter)
}

// TestCommandLine: each command does what its key does, a unique prefix
// names it, a bare number is a frame, and what cannot be done is said
// with the commands or the range there are.
func TestCommandLine(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	tl := d.tracks[0].tl
	if tl.StepCount() < 2 {
		t.Fatalf("the tape has %d steps; the test wants two", tl.StepCount())
	}
	runLine(d, "step 2")
	if got, want := cursor(d), tl.StepStart(1); got != want {
		t.Errorf(":step 2 put the needle on %d, want %d (the first frame of step 2)", got, want)
	}
	runLine(d, "7")
	if cursor(d) != 7 {
		t.Errorf(":7 put the needle on %d", cursor(d))
	}
	runLine(d, "fr 3")
	if cursor(d) != 3 {
		t.Errorf(":fr 3 put the needle on %d", cursor(d))
	}
	for line, want := range map[string]string{
		"step 99":  "no step \"99\": steps are 1 to",
		"frame -1": "no frame \"-1\"",
		"bogus":    "no command \"bogus\": commands are frame, step, search",
		"s 2":      ":s is step or search",
		"filter x": "no kind \"x\": :filter takes llm",
		"write":    ":write takes the file",
	} {
		runLine(d, line)
		if !strings.Contains(d.status, want) {
			t.Errorf(":%s: status %q, want %q in it", line, d.status, want)
		}
	}
	runLine(d, "filter llm")
	if d.tracks[0].view.Only != timeline.ClassLLM {
		t.Errorf(":filter llm: showing %v", d.tracks[0].view.Only)
	}
	runLine(d, "filter all")
	if d.tracks[0].view.Only != 0 {
		t.Errorf(":filter all: showing %v", d.tracks[0].view.Only)
	}
	// An empty note on a frame without a marker made an empty marker.
	runLine(d, "note")
	if tv := d.tracks[0]; tv.markers[tv.cursor] || !strings.Contains(d.status, "no note on this frame to clear") {
		t.Errorf(":note with no text and no marker: marker %v, status %q", tv.markers[tv.cursor], d.status)
	}
	runLine(d, "note checked by hand")
	if tv := d.tracks[0]; !tv.markers[tv.cursor] || tv.notes[tv.cursor] != "checked by hand" {
		t.Errorf(":note: marker %v, note %q", tv.markers[tv.cursor], tv.notes[tv.cursor])
	}
	runLine(d, "note")
	if tv := d.tracks[0]; !tv.markers[tv.cursor] || tv.notes[tv.cursor] != "" {
		t.Errorf(":note with no text: marker %v, note %q; want the marker, the note gone", tv.markers[tv.cursor], tv.notes[tv.cursor])
	}
}

// TestCommandCompletionAndHistory: tab completes a command's name, and up
// and down walk back through what was typed at each prompt this session.
func TestCommandCompletionAndHistory(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	press(d, runes(":"))
	typeText(d, "fi")
	press(d, keyTab)
	if v := d.prompt.input.Value(); v != "filter " {
		t.Errorf(":fi and tab: %q, want %q", v, "filter ")
	}
	press(d, keyEsc)
	runLine(d, "frame 4")
	runLine(d, "frame 9")
	press(d, runes(":"))
	up := tea.KeyMsg{Type: tea.KeyUp}
	press(d, up)
	if v := d.prompt.input.Value(); v != "frame 9" {
		t.Errorf("up once: %q, want the last command", v)
	}
	press(d, up, up)
	if v := d.prompt.input.Value(); v != "frame 4" {
		t.Errorf("up at the oldest: %q, want it kept", v)
	}
	press(d, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyDown})
	if v := d.prompt.input.Value(); v != "" {
		t.Errorf("down past the newest: %q, want what was typed (nothing)", v)
	}
	press(d, keyEsc)
	// Each prompt keeps its own: the search prompt recalls searches.
	press(d, runes("/"))
	typeText(d, "weather")
	press(d, keyEnter, runes("/"), tea.KeyMsg{Type: tea.KeyBackspace}, up)
	if v := d.prompt.input.Value(); v != "weather" {
		t.Errorf("the search prompt's history: %q, want the last search", v)
	}
}

// TestCommandLineTmux: in a real terminal, with a keys file: :step puts
// the needle on a step, a rebound key moves it, a wrong command is said,
// + zooms the frame view, " lists the markers, and | filters the rows.
func TestCommandLineTmux(t *testing.T) {
	t.Parallel()
	testenv.RequireTmux(t)
	testenv.Short(t, "runs the binary in tmux")
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	tl, err := timeline.Open(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	n := tl.Len()
	if tl.StepCount() < 3 {
		t.Fatalf("the tape has %d steps; the test wants three", tl.StepCount())
	}
	dir := t.TempDir()
	tape := filepath.Join(dir, "agent-run.jbx") // a copy: markers are kept beside it
	b, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tape, b, 0o644); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(dir, "keys.json")
	if err := os.WriteFile(keys, []byte(`{"next_step": ["J"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("jukebox-cmd-%d", os.Getpid()), name: "play"}
	t.Cleanup(func() { s.tmux("kill-server") })
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "30",
		fmt.Sprintf("env NO_COLOR= JUKEBOX_KEYS=%s %s play %s", keys, bin, tape)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	s.waitScreen("JUKEBOX", "q quit")
	s.keys(":", "step 2", "Enter")
	s.waitScreen(fmt.Sprintf("frame %d of %d", tl.StepStart(1), n))
	s.keys("J")
	s.waitScreen(fmt.Sprintf("frame %d of %d", tl.StepStart(2), n))
	s.keys(":", "bogus", "Enter")
	s.waitScreen(`no command "bogus"`)
	s.keys(":", "fi", "Tab", "llm", "Enter")
	s.waitScreen("only LLM")
	s.keys("+")
	s.waitScreen("the frame view has the screen")
	if scr := s.screen(); strings.Contains(scr, "timeline ·") {
		t.Errorf("zoomed, the timeline is still on screen:\n%s", scr)
	}
	s.keys("+", ":", "note checked", "Enter", "\"")
	s.waitScreen("markers · 1 marker", "checked")
	s.keys("Escape", ":", "filter all", "Enter", "|", "read_file")
	s.waitScreen("only rows holding: read_file")
	s.keys("Enter")
	s.waitScreen(`only rows holding "read_file"`)
}
