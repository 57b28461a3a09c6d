package tui

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/themes"
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
