package tui

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

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

// TestLastFrameKey: G goes to the last frame, as in less and vim.
func TestLastFrameKey(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	press(d, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("G")})
	if got, want := d.tracks[0].cursor, d.tracks[0].tl.Len()-1; got != want {
		t.Errorf("G: needle on %d, want the last frame %d", got, want)
	}
}

// TestCounted: one of a thing is said in the singular ("1 message", not
// "1 messages"); more keep thousands separators.
func TestCounted(t *testing.T) {
	for n, want := range map[int64]string{0: "0 frames", 1: "1 frame", 2: "2 frames", 12000: "12,000 frames"} {
		if got := counted(n, "frame", "frames"); got != want {
			t.Errorf("counted(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestPromptsOfferTheLastAnswer: / and g show the last answer selected:
// typing replaces it (the issue saw "unicodezzzqqq"), enter reuses it.
func TestPromptsOfferTheLastAnswer(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	enter := tea.KeyMsg{Type: tea.KeyEnter}
	press(d, runes("g"), runes("4"), runes("2"), enter)
	press(d, runes("G"))
	press(d, runes("g"), enter) // enter reuses 42
	if got := d.tracks[0].cursor; got != 42 {
		t.Errorf("g, enter: needle on %d, want the last answer, 42", got)
	}
	press(d, runes("g"), runes("7"), enter) // typing replaces it
	if got := d.tracks[0].cursor; got != 7 {
		t.Errorf("g, 7, enter: needle on %d, want 7", got)
	}
	press(d, runes("/"), runes("plan"), enter)
	press(d, runes("/"), runes("tool"))
	if got := d.prompt.input.Value(); got != "tool" {
		t.Errorf("/ after a search for plan, then typing tool: %q", got)
	}
	press(d, tea.KeyMsg{Type: tea.KeyEsc})
	press(d, runes("/"), tea.KeyMsg{Type: tea.KeyLeft}, runes("s"))
	if got := d.prompt.input.Value(); got != "plasn" && got != "plans" {
		t.Errorf("a cursor key keeps the last answer to edit: %q", got)
	}
}

// TestHeaderKeepsFigures: a long absolute command path gets the room the
// figures leave, cut with …; the tokens, cost and exit stay.
func TestHeaderKeepsFigures(t *testing.T) {
	path := filepath.Join(t.TempDir(), "long.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := "/home/someone/.local/share/virtualenvs/invoice-reconciliation-agent-x8Yz2/bin/python3"
	w.Append(0, tapefmt.RunStart{Argv: []string{long, "/home/someone/src/agents/invoice_reconciliation/main.py"}, Started: "2026-12-01T09:30:00Z"})
	w.Append(0, tapefmt.RunEnd{ExitCode: 3})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 100, 30, path)
	h := d.header()
	if !strings.Contains(h, "exit 3") || !strings.Contains(h, "2 frames") || !strings.Contains(h, "…") {
		t.Errorf("header at 100 columns:\n%s", h)
	}
}

// TestSystemPromptIndent: every line of a multi-line system prompt keeps
// its indent in the frame view (only the first was indented), and a tab
// keeps its column.
func TestSystemPromptIndent(t *testing.T) {
	st := NewStyles(testOptions().Theme, asciiRenderer())
	m := newFrameView(&st)
	b := &lines{w: 80}
	m.callText(b, &timeline.CallDetail{System: "You are terse.\nRules:\n\t- be kind"})
	got := strings.Join(b.out, "\n")
	if !strings.Contains(got, "\n  You are terse.\n  Rules:\n    - be kind") {
		t.Errorf("system prompt:\n%s", got)
	}
}

// TestStepText: steps count from 1, as the header's "5 steps" does: the
// status runs step 1/5 to step 5/5, then "after step 5/5" for the run's end.
func TestStepText(t *testing.T) {
	for _, c := range []struct {
		s, n int
		want string
	}{{0, 5, "step 1/5"}, {4, 5, "step 5/5"}, {0, 0, "no step: no model call"}} {
		if got := stepText(c.s, c.n); got != c.want {
			t.Errorf("stepText(%d, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// TestToolKeyFindsAnswersThatCallTools: t stops on a model answer that
// asks for a tool even when no tool.call frame follows (the demo tape's
// agent runs its tools itself; t said "no later tool call" there).
func TestToolKeyFindsAnswersThatCallTools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "asks.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Started: "2026-12-01T09:30:00Z"})
	w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200})
	body, _ := w.PutBlob("answer", []byte(`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{}"}}]}}]}`))
	w.Append(0, tapefmt.LLMResponse{Call: 1, Status: 200, Body: body})
	w.Append(0, tapefmt.RunEnd{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 120, 30, path)
	press(d, runes("t"))
	if got := d.tracks[0].cursor; got != 2 || d.status == "no later tool call" {
		t.Errorf("t: needle on %d (status %q), want 2, the answer that calls read_file", got, d.status)
	}
}

// TestMarkersKeptBesideTheTape: m saves the markers in the tape's sidecar
// folder, never in the tape; they and their notes come back on the next
// open; a tape in a read-only place keeps them for the session and says
// so.
func TestMarkersKeptBesideTheTape(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	raw, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tape, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *Deck {
		o := testOptions()
		o.KeepMarkers = true
		d := New([]string{tape}, o)
		t.Cleanup(d.Close)
		d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
		return d
	}
	d := open()
	press(d, runes("g"), runes("5"), tea.KeyMsg{Type: tea.KeyEnter}, runes("m"))
	press(d, runes("g"), runes("9"), tea.KeyMsg{Type: tea.KeyEnter}, runes("m"))
	if after, _ := os.ReadFile(tape); !bytes.Equal(after, raw) {
		t.Fatal("a marker changed the tape")
	}
	// A note, written in the file, comes back with the marker.
	saved, err := timeline.LoadMarkers(tape)
	if err != nil || len(saved) != 2 || saved[0].Frame != 5 || saved[1].Frame != 9 {
		t.Fatalf("saved: %+v %v", saved, err)
	}
	saved[1].Note = "the model starts to loop here"
	if err := timeline.SaveMarkers(tape, saved); err != nil {
		t.Fatal(err)
	}
	d2 := open()
	if !d2.tracks[0].markers[5] || !d2.tracks[0].markers[9] {
		t.Fatalf("markers after reopening: %v", d2.tracks[0].markers)
	}
	press(d2, runes("g"), runes("9"), tea.KeyMsg{Type: tea.KeyEnter})
	if !strings.Contains(d2.View(), "⚑ the model starts to loop here") {
		t.Error("the marker's note is not shown on its frame")
	}
	// Unmarking the last one removes the file.
	press(d2, runes("m"), runes("g"), runes("5"), tea.KeyMsg{Type: tea.KeyEnter}, runes("m"))
	if _, err := os.Stat(filepath.Join(tape+".d", timeline.MarkersFile)); !os.IsNotExist(err) {
		t.Errorf("markers.json after the last marker went: %v", err)
	}
	// A place the markers cannot be written (here a file where the sidecar
	// folder would go, which stops root too): kept for the session, said.
	if err := os.WriteFile(tape+".d", []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	press(d2, runes("m"))
	if !strings.Contains(d2.status, "markers kept for this session only") || !d2.tracks[0].markers[5] {
		t.Errorf("read-only: status %q, markers %v", d2.status, d2.tracks[0].markers)
	}
}

// TestStatusLineSegments: a long message is cut with … before the fork's
// figures, kept apart from them by a bar, and a failed fork is said once
// (the issue saw "0 by…fork failed fork at 5").
func TestStatusLineSegments(t *testing.T) {
	d := newDeck(t, 80, 24, agentRun)
	d.run = &forkRun{st: d.st, at: 5, calls: 1, finished: true, err: errors.New("upstream refused the connection")}
	defer func() { d.run = nil }() // a run made by hand: nothing for Close to stop
	d.status = forkOutcome(d.run) + strings.Repeat(" and more words", 5)
	line := d.statusLine()
	if !strings.Contains(line, "…") || !strings.Contains(line, "│") || strings.Count(line, "fail") != 1 {
		t.Errorf("status line:\n%q", line)
	}
	if visibleWidth(line) != 80 {
		t.Errorf("width %d, want 80", visibleWidth(line))
	}
}

// TestHelpOverlay: ? opens the keys' help, disabled keys listed with
// "(not now)" so they are learnt; keys do not act underneath it; it
// scrolls on a small screen; esc closes it.
func TestHelpOverlay(t *testing.T) {
	d := newDeck(t, 40, 12, agentRun)
	press(d, runes("?"))
	first := d.View()
	if all := strings.Join(d.helpView(1000), "\n"); !strings.Contains(all, "speed 1x/2x/8x (not now)") {
		t.Errorf("disabled keys are not listed:\n%s", all)
	}
	press(d, runes("l"), runes("G"))
	if d.tracks[0].cursor != 0 {
		t.Errorf("a key acted under the help: needle on %d", d.tracks[0].cursor)
	}
	press(d, tea.KeyMsg{Type: tea.KeyPgDown})
	if d.View() == first {
		t.Error("the help does not scroll at 40x12")
	}
	press(d, tea.KeyMsg{Type: tea.KeyEsc})
	if d.help.ShowAll {
		t.Error("esc did not close the help")
	}
}

// TestKeysThatDoNothingSaySo: the keys that did nothing and said
// nothing. On the frame view, the timeline's keys move the needle (l, n,
// H) and esc goes back; enter on a timeline reads the frame; d with one
// tape, x while paused, ; before a search and ' without markers say why;
// tab inside the diff no longer closes it; f on the second timeline says
// where forks start.
func TestKeysThatDoNothingSaySo(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	press(d, keyEnter)
	if d.pane != paneFrame {
		t.Fatalf("enter: pane %v, want the frame view", d.pane)
	}
	before := d.tracks[0].cursor
	press(d, runes("l"))
	if d.pane != paneFrame || d.tracks[0].cursor != before+1 {
		t.Errorf("l on the frame view: pane %v, needle %d, want the frame view and %d", d.pane, d.tracks[0].cursor, before+1)
	}
	press(d, runes("n"))
	if k, _ := d.tracks[0].tl.KindAt(d.tracks[0].cursor); k != tapefmt.KindLLMRequest {
		t.Errorf("n on the frame view: the needle is on a %s", k)
	}
	press(d, keyEsc)
	if d.pane != paneTracks {
		t.Errorf("esc on the frame view: pane %v", d.pane)
	}
	for _, c := range []struct{ key, want string }{
		{"d", "d compares two timelines"},
		{"x", "x sets the playback speed while playing"},
		{";", "no search yet"},
		{"'", "no markers yet"},
	} {
		d.status = ""
		press(d, runes(c.key))
		if !strings.Contains(d.status, c.want) {
			t.Errorf("%s: status %q, want %q", c.key, d.status, c.want)
		}
	}

	two := newDeck(t, 160, 48, agentRun, tornTape)
	press(two, runes("d"))
	if two.pane != paneDiff {
		t.Fatalf("d with two tapes: pane %v", two.pane)
	}
	press(two, keyTab)
	if two.pane != paneDiff || !strings.Contains(two.status, "esc or d closes it") {
		t.Errorf("tab in the diff: pane %v, status %q", two.pane, two.status)
	}
	press(two, keyEsc, keyTab)
	press(two, runes("f"))
	if two.pane == paneForm || !strings.Contains(two.status, "two tapes are open for comparing") {
		t.Errorf("f on the second timeline: pane %v, status %q", two.pane, two.status)
	}
}

// TestScrubberDragAndScale: the scrubber can be dragged (press on the bar,
// move anywhere, let go) and laid out by time, frame or step (s cycles):
// the issue saw 1.7 s of interpreter start-up push every step into a
// quarter of a time-scaled bar.
func TestScrubberDragAndScale(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	mouse := func(x, y int, a tea.MouseAction) {
		d.Update(tea.MouseMsg{X: x, Y: y, Action: a, Button: tea.MouseButtonLeft})
	}
	mouse(10, headerRows, tea.MouseActionPress)
	at := d.tracks[0].cursor
	mouse(80, 20, tea.MouseActionMotion) // off the bar: a drag goes on
	dragged := d.tracks[0].cursor
	if dragged <= at || dragged != d.scrub.frameAt(80) {
		t.Errorf("drag from x=10 (frame %d) to x=80: needle on %d, want %d", at, dragged, d.scrub.frameAt(80))
	}
	mouse(80, 20, tea.MouseActionRelease)
	mouse(30, 20, tea.MouseActionMotion)
	if d.tracks[0].cursor != dragged {
		t.Error("the needle moved after the button was let go")
	}

	tl := d.tracks[0].tl
	w := d.scrub.barWidth() - 1
	for _, c := range []struct {
		want scale
		name string
	}{{byFrame, "frame"}, {byStep, "step"}, {byTime, "time"}} {
		press(d, runes("s"))
		if d.scrub.scale != c.want || !strings.Contains(d.status, "by "+c.name) {
			t.Fatalf("s: scale %v, status %q, want by %s", d.scrub.scale, d.status, c.name)
		}
		switch c.want {
		case byFrame:
			if got := d.scrub.pos(tl.Len() / 2); got < w/2-2 || got > w/2+2 {
				t.Errorf("by frame: the middle frame at cell %d of %d", got, w)
			}
		case byStep:
			segs := d.scrub.segments()
			for s := 1; s < tl.Steps(); s++ {
				want := s * w / segs
				if got := d.scrub.pos(tl.StepStart(s)); got < want-1 || got > want+1 {
					t.Errorf("by step: step %d starts at cell %d, want about %d (%d steps)", s+1, got, want, segs)
				}
				if f := d.scrub.frameAt(d.scrub.pos(tl.StepStart(s)) + 1); tl.StepOf(f) != s && tl.StepOf(f) != s-1 {
					t.Errorf("by step: the cell of step %d's start is frame %d, of step %d", s+1, f, tl.StepOf(f)+1)
				}
			}
		}
	}
}

// TestNeedleMovesThroughAStream: while playing a long streamed call, the
// needle moves with the time played, not only from frame to frame (the
// issue saw the scrubber freeze through a streamed playback: the call is
// two frames, its request and its response).
func TestNeedleMovesThroughAStream(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	tl := d.tracks[0].tl
	req, _ := tl.Next(0, timeline.FindLLM, 1)
	resp := req + 1
	_, t0 := tl.KindAt(req)
	_, t1 := tl.KindAt(resp)
	d.tracks[0].SetCursor(req)
	d.scrub.playing, d.scrub.reached = true, t0+(t1-t0)*9/10
	if got, from := d.scrub.needle(), d.scrub.pos(req); got <= from || got > d.scrub.pos(resp) {
		t.Errorf("playing 90%% through the call: the needle at cell %d; the request is at %d, the response at %d", got, from, d.scrub.pos(resp))
	}
	d.scrub.playing = false
	if got := d.scrub.needle(); got != d.scrub.pos(req) {
		t.Errorf("paused: the needle at %d, want the cursor's cell %d", got, d.scrub.pos(req))
	}
}

// TestMarkerNoteKey: M writes a note on the frame's marker (setting one
// if none is there), kept beside the tape; M again offers the note to
// edit, and an empty answer clears it.
func TestMarkerNoteKey(t *testing.T) {
	tape := filepath.Join(t.TempDir(), "run.jbx")
	raw, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tape, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	o.KeepMarkers = true
	d := New([]string{tape}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	press(d, runes("g"), runes("7"), keyEnter, runes("M"))
	if d.pane != panePrompt || !strings.Contains(d.View(), "note on this marker:") {
		t.Fatalf("M: pane %v\n%s", d.pane, d.View())
	}
	typeText(d, "loop starts")
	press(d, keyEnter)
	saved, err := timeline.LoadMarkers(tape)
	if err != nil || len(saved) != 1 || saved[0].Frame != 7 || saved[0].Note != "loop starts" {
		t.Fatalf("saved: %+v %v", saved, err)
	}
	if !strings.Contains(d.View(), "⚑ loop starts") {
		t.Error("the note is not shown on its frame")
	}
	press(d, runes("M"))
	if got := d.prompt.answer(); got != "loop starts" {
		t.Errorf("M again offers %q", got)
	}
	press(d, tea.KeyMsg{Type: tea.KeyBackspace}, keyEnter)
	if saved, _ := timeline.LoadMarkers(tape); len(saved) != 1 || saved[0].Note != "" {
		t.Errorf("an empty note: saved %+v", saved)
	}
}

// TestFoldFilterSteps: runs of output are one row that z opens and folds
// again, Z unfolds everything, F keeps one kind of frame at a time (and
// says which), S shows one row per step with its calls, tokens, cost,
// latency and files; the needle stays on its frame through each.
func TestFoldFilterSteps(t *testing.T) {
	d := newDeck(t, 160, 48, agentRun)
	tv := d.tracks[0]
	screen := func() string { return d.View() }
	if s := screen(); !strings.Contains(s, "▸ 12 outputs (frames 3-14, z opens)") || strings.Contains(s, "fd1 plan") {
		t.Fatalf("output is not folded:\n%s", s)
	}
	press(d, runes("l"), runes("l"), runes("l"))
	if tv.cursor != 3 {
		t.Fatalf("three rows on from frame 0: frame %d, want the run at 3", tv.cursor)
	}
	press(d, runes("z"))
	if s := screen(); !strings.Contains(s, "fd1 plan") || strings.Contains(s, "frames 3-14") {
		t.Errorf("z did not open the run:\n%s", s)
	}
	press(d, runes("l"), runes("l"))
	if tv.cursor != 5 {
		t.Errorf("two rows into the opened run: frame %d, want 5", tv.cursor)
	}
	press(d, runes("z"))
	if s := screen(); !strings.Contains(s, "frames 3-14") || tv.cursor != 3 {
		t.Errorf("z inside the opened run did not fold it (needle on %d):\n%s", tv.cursor, s)
	}
	press(d, runes("Z"))
	if s := screen(); strings.Contains(s, "outputs (frames") || !strings.Contains(s, "fd1 plan") {
		t.Errorf("Z did not unfold the output:\n%s", s)
	}
	press(d, runes("Z"))

	press(d, runes("F"))
	if s := screen(); !strings.Contains(s, "only LLM") || strings.Contains(s, "ƒ write_file") || !strings.Contains(s, "#1 POST") {
		t.Errorf("F: not only LLM calls:\n%s", s)
	}
	if !strings.Contains(d.status, "only LLM") {
		t.Errorf("F says %q", d.status)
	}
	press(d, runes("l"))
	if k, _ := tv.tl.KindAt(tv.cursor); k != tapefmt.KindLLMResponse && k != tapefmt.KindLLMRequest && k != tapefmt.KindStep {
		t.Errorf("a row on under the LLM filter: frame %d is a %s", tv.cursor, k)
	}
	press(d, runes("F"))
	if k, _ := tv.tl.KindAt(tv.cursor); k != tapefmt.KindToolCall && k != tapefmt.KindToolResult && k != tapefmt.KindStep {
		t.Errorf("only tools: the needle is on frame %d, a %s the view hides", tv.cursor, k)
	}
	if s := screen(); !strings.Contains(s, "only tools") || !strings.Contains(s, "write_file") || strings.Contains(s, "» #") {
		t.Errorf("F again: not only tool calls:\n%s", s)
	}
	for range len(timeline.Classes) - 1 {
		press(d, runes("F"))
	}
	if tv.view.Only != 0 {
		t.Errorf("F through every class did not come back to every kind: %v", tv.view.Only)
	}

	press(d, runes("g"), runes("4"), runes("5"), tea.KeyMsg{Type: tea.KeyEnter})
	press(d, runes("S"))
	s := screen()
	for _, want := range []string{"5 steps", "step 1 · 1 call · 1 tool call", "step 5 · 1 call", "1 file"} {
		if !strings.Contains(s, want) {
			t.Errorf("S: %q missing:\n%s", want, s)
		}
	}
	if tv.rowOf(tv.cursor) != 2 {
		t.Errorf("S: the needle (frame %d) is on step row %d, want step 3's", tv.cursor, tv.rowOf(tv.cursor))
	}
	press(d, runes("l"))
	if tv.cursor != tv.tl.StepStart(3) {
		t.Errorf("a row on in steps: frame %d, want step 4's first, %d", tv.cursor, tv.tl.StepStart(3))
	}
}

// TestSearchCounterAndFields: a search says which match of how many the
// needle is on (match 2/5), ; and , step through the counted matches and
// wrap around; field terms find frames by kind, model, tool, path and
// status; a field value that means nothing is said, not searched.
func TestSearchCounterAndFields(t *testing.T) {
	d := newDeck(t, 160, 48, agentRun)
	tv := d.tracks[0]
	search := func(q string) {
		t.Helper()
		press(d, runes("/"))
		typeText(d, q)
		press(d, keyEnter)
	}
	search("kind:tool.call")
	if !strings.Contains(d.status, "found in frame 16 · match 1/5") {
		t.Errorf("the first match: status %q", d.status)
	}
	press(d, runes(";"))
	if tv.cursor != 35 || !strings.Contains(d.status, "match 2/5") {
		t.Errorf("; goes to frame %d, says %q; want 35, match 2/5", tv.cursor, d.status)
	}
	press(d, runes(","), runes(","))
	if tv.cursor != 92 || !strings.Contains(d.status, "match 5/5") {
		t.Errorf(", , from match 2 wraps to frame %d, says %q; want 92, match 5/5", tv.cursor, d.status)
	}
	for q, want := range map[string]int{
		"kind:llm.response model:gpt-4o-mini": 5, "tool:write": 5, "kind:files path:step_03": 1,
		"status:200 kind:llm": 5, "kind:errors": 0, "kind:llm plan": 7, "kind:llm.response plan": 3,
	} {
		frames, total, err := tv.tl.Matches(t.Context(), q, 100)
		if err != nil || total != want || len(frames) != want {
			t.Errorf("%q: %d matches (%v, %v), want %d", q, total, frames, err, want)
		}
	}
	search("kind:foo status:x")
	if !strings.Contains(d.status, "kind:foo, status:x: kind: takes") {
		t.Errorf("a field value that means nothing: status %q", d.status)
	}
	// The text of a search is marked in the frame view, scrolled to.
	search("edge cases")
	if !strings.Contains(d.frame.View(), "edge cases") {
		t.Errorf("the frame view does not show the match:\n%s", d.frame.View())
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.ANSI)
	b := lines{w: 80, mark: "edge", markStyle: r.NewStyle().Reverse(true)}
	if got := b.render(r.NewStyle(), "check Edge cases and edges"); got != "check \x1b[7mEdge\x1b[0m cases and \x1b[7medge\x1b[0ms" {
		t.Errorf("render with a mark = %q", got)
	}
}

// TestTakeFrameOut: w writes the frame as the view lays it out (JSON laid
// out, a tool's file content as lines), offering frame-N.txt, asking
// before it replaces a file, and saying why it cannot write; y sends it
// through OSC 52; o without a pager or less reads it in the frame view;
// v without an editor says what to do instead.
func TestTakeFrameOut(t *testing.T) {
	o := testOptions()
	var clip bytes.Buffer
	o.Clipboard = &clip
	o.Getenv = func(string) string { return "" }
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(d, runes("g"), runes("1"), runes("6"), keyEnter) // the tool call write_file
	dir := t.TempDir()
	t.Chdir(dir)
	press(d, runes("w"))
	if d.pane != panePrompt || d.prompt.input.Value() != "frame-16.txt" {
		t.Fatalf("w offers %q", d.prompt.input.Value())
	}
	press(d, keyEnter)
	got, err := os.ReadFile(filepath.Join(dir, "frame-16.txt"))
	if err != nil || !strings.Contains(string(got), "write_file") || !strings.Contains(string(got), "\n        # step 0\n        VALUE = 0\n") {
		t.Fatalf("frame-16.txt (%v):\n%s", err, got)
	}
	if strings.Contains(string(got), "\x1b") || !strings.Contains(d.status, "frame 16 written to frame-16.txt") {
		t.Errorf("status %q; escape sequences in the file: %v", d.status, strings.Contains(string(got), "\x1b"))
	}
	if err := os.WriteFile("frame-16.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	press(d, runes("w"), keyEnter)
	if d.pane != panePrompt || d.prompt.kind != promptOverwrite {
		t.Fatalf("w onto an existing file did not ask (status %q)", d.status)
	}
	press(d, runes("n"), keyEnter)
	if b, _ := os.ReadFile("frame-16.txt"); string(b) != "mine" || !strings.Contains(d.status, "kept as it was") {
		t.Errorf("n: the file holds %q, status %q", b, d.status)
	}
	press(d, runes("w"), keyEnter, runes("y"), keyEnter)
	if b, _ := os.ReadFile("frame-16.txt"); !strings.Contains(string(b), "write_file") {
		t.Errorf("y: the file holds %q", b)
	}
	press(d, runes("w"))
	typeText(d, "no/such/dir/f.txt")
	press(d, keyEnter)
	if !strings.Contains(d.status, `cannot write no/such/dir/f.txt: no such file or directory`) {
		t.Errorf("an unwritable path: status %q", d.status)
	}

	// ~ is the home folder, as in a shell.
	t.Setenv("HOME", dir)
	press(d, runes("w"))
	typeText(d, "~/home.txt")
	press(d, keyEnter)
	if b, err := os.ReadFile(filepath.Join(dir, "home.txt")); err != nil || !strings.Contains(string(b), "write_file") {
		t.Errorf("w ~/home.txt: %v (status %q)", err, d.status)
	}

	press(d, runes("y"))
	want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString(got) + "\x07"
	if clip.String() != want || !strings.Contains(d.status, "OSC 52") {
		t.Errorf("y wrote %q (status %q), want the frame's OSC 52", clip.String(), d.status)
	}

	t.Setenv("PATH", t.TempDir()) // no less
	press(d, runes("o"))
	if d.pane != paneFrame || !strings.Contains(d.status, "no $PAGER and no less") {
		t.Errorf("o with no pager: pane %v, status %q", d.pane, d.status)
	}
	press(d, keyEsc, runes("v"))
	if !strings.Contains(d.status, "no $VISUAL or $EDITOR set") {
		t.Errorf("v with no editor: status %q", d.status)
	}
}

// TestFilterCycleKeepsTheNeedle: cycling F through every kind and back
// left the needle far from where it was (each filter that hid its frame
// moved it on, and an empty one to the run's end): back to every kind,
// a needle the user did not move goes back to its frame.
func TestFilterCycleKeepsTheNeedle(t *testing.T) {
	d := newDeck(t, 160, 48, agentRun)
	tv := d.tracks[0]
	press(d, runes("g"), runes("1"), runes("2"), tea.KeyMsg{Type: tea.KeyEnter})
	home := tv.cursor
	for range len(timeline.Classes) + 1 {
		press(d, runes("F"))
	}
	if tv.view.Only != 0 || tv.cursor != home {
		t.Errorf("after F through every kind: filter %v, needle on frame %d, want %d", tv.view.Only, tv.cursor, home)
	}
}

// TestForkOutcomeNamesTheUpstream: a fork whose live calls never reached
// their upstream (the demo's scripted model gone, a public API offline)
// ended as "fork done: exit 1, 2 calls", with no word of why.
func TestForkOutcomeNamesTheUpstream(t *testing.T) {
	r := &forkRun{res: &engine.Result{End: tapefmt.RunEnd{ExitCode: 1}, Calls: 2, Frames: 9,
		LiveFailed: 1, LiveError: "dial tcp: lookup api.example.test: no such host"}}
	if s := forkOutcome(r); !strings.Contains(s, "1 call never reached the upstream: dial tcp: lookup api.example.test") {
		t.Errorf("forkOutcome: %q", s)
	}
}

// TestForkCostSaysWhatItSpent: a fork's header and scrubber say what of
// the timeline's cost the fork spent (what its circuit breaker counted),
// or that all of it so far came from the parent's tape; a run that is no
// fork says nothing of it.
func TestForkCostSaysWhatItSpent(t *testing.T) {
	for _, fork := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "fork.jbx")
		w, err := tapefmt.Create(path, tapefmt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		start := tapefmt.RunStart{Argv: []string{"agent"}, Started: "2026-12-01T09:30:00Z"}
		if fork {
			start.Mode, start.Parent = tapefmt.ModeFork, &tapefmt.ParentRef{Tape: "ab", Frame: 3, Call: 2, Path: "parent.jbx"}
		}
		w.Append(0, start)
		for i := range 3 { // $0.0045 each
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "demo-large"})
			w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: "demo-large", Usage: tapefmt.Usage{Input: 1000, Output: 100}})
		}
		w.Append(0, tapefmt.RunEnd{})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		d := newDeck(t, 160, 30, path)
		h := d.header()
		if got := strings.Contains(h, "$0.01 ($0.0045 spent)"); got != fork || !strings.Contains(h, "$0.01") {
			t.Errorf("fork %v: header %q", fork, h)
		}
		tl := d.tracks[0].tl
		if got, want := costText(tl, 4, 0.009), "$0.0090 (from the parent)"; fork && got != want {
			t.Errorf("a fork's cost at its second call: %q, want %q", got, want)
		}
		if got := costText(tl, 4, 0.009); !fork && got != "$0.0090" {
			t.Errorf("a run's cost at its second call: %q", got)
		}
	}
}
