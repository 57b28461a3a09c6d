package tui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestForkFormScope: the form's fork reaches every later call unless told
// "once", as `jukebox fork` does without --once; anything else is an error
// naming the field.
func TestForkFormScope(t *testing.T) {
	for value, want := range map[string]engine.Scope{"": engine.ScopeAll, "all": engine.ScopeAll, " once ": engine.ScopeOnce, "twice": ""} {
		st := NewStyles(themes.Default(), lipgloss.DefaultRenderer())
		f := newForkForm(&st, 3, nil)
		if value != "all" {
			f.fields[fieldScope].SetValue(value)
		}
		o, err := f.Overrides()
		switch {
		case want == "" && err == nil:
			t.Errorf("apply to %q: no error", value)
		case want != "" && (err != nil || o.Scope != want):
			t.Errorf("apply to %q: scope %q, %v; want %q", value, o.Scope, err, want)
		}
	}
}

// TestForkFormScrollsToTheFocus: at 40x12 the form does not fit; it
// scrolls so that the focused field is on screen (the issue saw the
// last fields never shown), and a wrong field's error stays in sight.
func TestForkFormScrollsToTheFocus(t *testing.T) {
	d := newDeck(t, 40, 12, agentRun)
	press(d, runes("n"), runes("f"))
	if d.pane != paneForm {
		t.Fatalf("f: pane %v", d.pane)
	}
	for range 4 {
		press(d, keyTab)
	}
	if v := d.View(); !strings.Contains(v, "apply to") {
		t.Errorf("the focused field (apply to) is not on screen:\n%s", v)
	}
	back := tea.KeyMsg{Type: tea.KeyShiftTab}
	press(d, back, back) // back to the temperature
	typeText(d, "hot")
	press(d, keyEnter)
	if v := d.View(); !strings.Contains(v, "temperature \"hot\"") || !strings.Contains(v, "temperature") {
		t.Errorf("the error and its field are not on screen:\n%s", v)
	}
}

// TestSecondFork: a new fork clears the parent's ≠ from the diff with the
// earlier fork, and says where the earlier fork's tape stays (its
// timeline gives way to the new one's).
func TestSecondFork(t *testing.T) {
	o := testOptions()
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	o.PrepareFork = func(fo *engine.ForkOptions) error { fo.Tape = "/tapes/second.jbx"; return nil }
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	d.tracks[0].diverge = 7 // as the diff with the first fork left it
	d.tracks = append(d.tracks, openView(t, d, tornTape, "fork"))
	d.run = &forkRun{st: d.st, tape: tornTape, finished: true, cancelFn: func() {}, done: make(chan struct{})}
	press(d, runes("n"), runes("f"))
	if d.pane != paneForm {
		t.Fatalf("f after a finished fork: pane %v, status %q", d.pane, d.status)
	}
	press(d, keyEnter)
	if d.tracks[0].diverge != -1 {
		t.Errorf("the parent keeps the earlier fork's divergence at %d", d.tracks[0].diverge)
	}
	if !strings.Contains(d.status, "the earlier fork stays in torn.jbx (b lists the forks)") {
		t.Errorf("status %q", d.status)
	}
	close(d.run.done) // press runs no batch: the fork's command never ran
}

// TestLiveForkStreams: a fork's call in flight shows as it streams (the
// issue saw only the spinner move for 17 s): its latest words on the
// status line, and its text so far under the frame it was forked at.
func TestLiveForkStreams(t *testing.T) {
	o := testOptions()
	var onEvent func(engine.Event)
	o.PrepareFork = func(fo *engine.ForkOptions) error { onEvent = fo.OnEvent; return nil }
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	d := New([]string{agentRun}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(d, runes("n"), runes("f"), keyEnter)
	if onEvent == nil || d.run == nil {
		t.Fatal("no fork started")
	}
	onEvent(engine.Event{Kind: engine.EventRequest, Call: 1, CallUsage: llmwire.CallUsage{Model: "demo-small"}})
	for _, piece := range []string{"Refactoring the ", "config loader, ", "step one done"} {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": piece}}}})
		onEvent(engine.Event{Kind: engine.EventChunk, Call: 1, Data: append(append([]byte("data: "), b...), "\n\n"...)})
	}
	d.Update(forkStreamMsg{})
	v := d.View()
	if !strings.Contains(v, "the fork's call, live") || !strings.Contains(v, "Refactoring the config loader, step one done") {
		t.Errorf("the frame view does not show the call in flight:\n%s", v)
	}
	if !strings.Contains(v, "step one done") {
		t.Errorf("the status line does not show its latest words:\n%s", v)
	}
	onEvent(engine.Event{Kind: engine.EventResponse, Call: 1})
	d.Update(forkEventMsg{engine.Event{Kind: engine.EventResponse, Call: 1}})
	if v := d.View(); strings.Contains(v, "the fork's call, live") {
		t.Errorf("the answer is whole, yet shown as in flight:\n%s", v)
	}
	close(d.run.done) // press runs no batch: the fork's command never ran
}

// TestForkModelPicker: the form says where live calls go and which calls
// the changes reach (as the scope field reads), lists the upstream's
// models, and ctrl+n / ctrl+p put one in the model field, from the model
// recorded; a list that cannot be had is said, and the model is typed.
func TestForkModelPicker(t *testing.T) {
	d := newDeck(t, 120, 40, agentRun)
	press(d, runes("n"), runes("n"), runes("f"))
	if d.pane != paneForm {
		t.Fatalf("f: pane %v, status %q", d.pane, d.status)
	}
	v := d.View()
	for _, want := range []string{"this call and later ones go live to", "https://llm.example/v1",
		"every later one to the same endpoint", "pick one of 3: demo-large · demo-small · [gpt-4o-mini]"} {
		if !strings.Contains(v, want) {
			t.Errorf("the form lacks %q:\n%s", want, v)
		}
	}
	press(d, keyCtrl(tea.KeyCtrlN))
	if got := d.form.fields[fieldModel].Value(); got != "demo-large" {
		t.Errorf("ctrl+n from gpt-4o-mini: %q", got)
	}
	press(d, keyCtrl(tea.KeyCtrlP), keyCtrl(tea.KeyCtrlP))
	if got := d.form.fields[fieldModel].Value(); got != "demo-small" {
		t.Errorf("ctrl+p twice: %q", got)
	}
	if !strings.Contains(d.View(), "[demo-small]") {
		t.Errorf("the picked model is not marked:\n%s", d.View())
	}
	d.form.fields[fieldScope].SetValue("once")
	if !strings.Contains(d.View(), "apply to this call only") {
		t.Errorf("scope once is not said:\n%s", d.View())
	}
	if o, err := d.form.Overrides(); err != nil || o.Model != "demo-small" || o.Scope != engine.ScopeOnce {
		t.Errorf("overrides %+v, %v", o, err)
	}

	o := testOptions()
	o.ListModels = func(context.Context, string, string, []string) ([]string, error) {
		return nil, errors.New("401 Unauthorized")
	}
	d2 := New([]string{agentRun}, o)
	t.Cleanup(d2.Close)
	d2.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(d2, runes("n"), runes("n"), runes("f"), keyCtrl(tea.KeyCtrlN))
	if v := d2.View(); !strings.Contains(v, "no model list from https://llm.example/v1: 401 Unauthorized") || d2.form.fields[fieldModel].Value() != "gpt-4o-mini" {
		t.Errorf("a refused list:\n%s", v)
	}
}

func keyCtrl(k tea.KeyType) tea.KeyMsg { return tea.KeyMsg{Type: k} }

// TestForkFormWarnsOfAMissingFolder (issue 33 item 11): a tape whose
// recorded folder is gone forks in the tape's own folder, not the
// turntable's, and the form says so, and that the recorded script is not
// found there.
func TestForkFormWarnsOfAMissingFolder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "moved.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"sh", "agent.sh"}, Cwd: filepath.Join(dir, "gone")})
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "demo-small"})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Model: "demo-small"})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 160, 40, path)
	got, note := forkDir(d.tracks[0].tl)
	if got != dir || !strings.Contains(note, "is not here: the agent runs in "+dir) || !strings.Contains(note, "the recorded command sh is not found there") {
		t.Errorf("forkDir = %q, %q", got, note)
	}
	press(d, runes("f"))
	if v := d.View(); d.pane != paneForm || !strings.Contains(v, "⚠ the recorded folder") {
		t.Errorf("the form does not warn of the missing folder:\n%s", v)
	}
	os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("true"), 0o644)
	if _, note := forkDir(d.tracks[0].tl); strings.Contains(note, "not found") {
		t.Errorf("the script beside the tape: %q", note)
	}
}

// TestNamedFork (issue 33 item 11): the form's name field names the fork's
// run and its tape beside the parent, and b lists it by that name; a name
// that would not make a file name is refused, naming the field.
func TestNamedFork(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "run.jbx")
	raw, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(root, raw, 0o644)
	o := testOptions()
	var got engine.ForkOptions
	o.PrepareFork = func(fo *engine.ForkOptions) error {
		got = *fo
		return nil
	}
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	d := New([]string{root}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	press(d, runes("n"), runes("f"))
	if d.pane != paneForm {
		t.Fatalf("f: pane %v", d.pane)
	}
	for range fieldName {
		press(d, keyTab)
	}
	typeText(d, "../evil")
	press(d, keyEnter)
	if v := d.View(); d.pane != paneForm || !strings.Contains(v, `name "../evil"`) {
		t.Fatalf("a bad name is not refused:\n%s", v)
	}
	for range len("../evil") {
		press(d, tea.KeyMsg{Type: tea.KeyBackspace})
	}
	typeText(d, "try-small")
	_, cmd := d.Update(keyEnter)
	if b, ok := cmd().(tea.BatchMsg); ok { // the fork, run (it fails at once), and the spinner
		for _, c := range b {
			if c != nil {
				d.Update(c())
			}
		}
	}
	if got.Name != "try-small" || got.Tape != "" {
		t.Errorf("the fork asked for: name %q, tape %q", got.Name, got.Tape)
	}
	if i := d.familyIndex(filepath.Join(dir, "try-small.jbx")); i < 0 {
		t.Errorf("the fork's tape is not try-small.jbx beside the parent: %+v", d.family)
	}
	d.pane = paneTracks
	press(d, runes("b"))
	if v := d.View(); !strings.Contains(v, "“try-small”") {
		t.Errorf("b does not list the fork by its name:\n%s", v)
	}
}

// TestJumpList (issue 33 item 9): n, e, ', g, /, home and end are jumps;
// [ (or ctrl+o) goes back along them and ] forward again, as vim's jump
// list does; plain moves are no jumps.
func TestJumpList(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	tv := d.tracks[0]
	tv.SetCursor(0)
	press(d, runes("n"))
	first := tv.cursor
	press(d, runes("n"))
	second := tv.cursor
	press(d, runes("l")) // a plain move: no jump
	moved := tv.cursor
	if first == 0 || second == first || moved != second+1 {
		t.Fatalf("n, n, l: frames %d, %d, %d", first, second, moved)
	}
	press(d, runes("["))
	if tv.cursor != first {
		t.Errorf("[ went to %d, want %d (where the second n jumped from)", tv.cursor, first)
	}
	press(d, tea.KeyMsg{Type: tea.KeyCtrlO})
	if tv.cursor != 0 {
		t.Errorf("ctrl+o went to %d, want 0", tv.cursor)
	}
	press(d, runes("]"), runes("]"))
	if tv.cursor != moved {
		t.Errorf("] ] came forward to %d, want %d", tv.cursor, moved)
	}
	press(d, runes("]"))
	if !strings.Contains(d.View(), "no jump ahead") {
		t.Errorf("] at the present says nothing:\n%s", d.View())
	}
	press(d, keyEnd, runes("["))
	if tv.cursor != moved {
		t.Errorf("end then [ went to %d, want %d", tv.cursor, moved)
	}
}

// TestForkFromTheStart: the form's workspace field takes recorded or start
// (anything else is said in the form); start rebuilds the run's start from
// the tape's snapshot into a new folder the fork runs in.
func TestForkFromTheStart(t *testing.T) {
	// The start goes into a folder of the temporary folder, which the
	// fork command below (not run here) would settle: the test's own.
	t.Setenv("TMPDIR", t.TempDir())
	tape := writeBoothTape(t)
	o := testOptions()
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	d := New([]string{tape}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(d, runes("n"), runes("f"))
	if d.pane != paneForm {
		t.Fatal("no form")
	}
	d.form.fields[fieldWorkspace].SetValue("elsewhere")
	press(d, keyEnter)
	if d.run != nil || !strings.Contains(d.form.err, "workspace: recorded or start") {
		t.Fatalf("workspace elsewhere: run %v, form error %q", d.run != nil, d.form.err)
	}
	d.form.fields[fieldWorkspace].SetValue("start")
	press(d, keyEnter)
	if d.run == nil {
		t.Fatalf("workspace start: no fork started (%q)", d.form.err)
	}
	close(d.run.done)

	tl, err := timeline.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	dir, err := startWorkspace(tl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ws, err := tl.WorkspaceAt(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ws.Files {
		if f.Type != "file" {
			continue
		}
		want, _ := ws.Content(f)
		got, err := os.ReadFile(filepath.Join(dir, f.Path))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s in the start folder: %q, %v; want %q", f.Path, got, err, want)
		}
	}
}

// TestForkFromTheStartNeedsTheAgentThere: a run whose script lies beside
// its workspace (python3 ../agent.py) forked from its start died at once
// ("can't open file"), the form having said nothing; it says why now, and
// no fork runs.
func TestForkFromTheStartNeedsTheAgentThere(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	tape := writeBoothTapeOf(t, []string{"python3", "../agent.py", "files"})
	o := testOptions()
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	d := New([]string{tape}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	press(d, runes("n"), runes("f"))
	d.form.fields[fieldWorkspace].SetValue("start")
	press(d, keyEnter)
	if d.run != nil || !strings.Contains(d.form.err, "../agent.py lies outside the workspace") {
		t.Fatalf("a fork from the start of a run whose script is beside it: run %v, form error %q", d.run != nil, d.form.err)
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("the start folder was left: %v", left)
	}
}
