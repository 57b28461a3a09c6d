package tui

import (
	"context"
	"io"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/timeline"
)

const (
	agentRun = "../testdata/tapes/agent-run.jbx"
	tornTape = "../testdata/tapes/torn.jbx"
	notATape = "../testdata/tapes/seal.key"
)

// asciiRenderer draws without any escape sequence, as golden files want.
func asciiRenderer() *lipgloss.Renderer {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	r.SetHasDarkBackground(true)
	return r
}

// testOptions are deterministic: ASCII, the diner theme, a fixed clock.
func testOptions() Options {
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	return Options{Theme: themes.Diner(), Renderer: asciiRenderer(), Now: func() time.Time { return now },
		Upstreams: map[string]string{"openai": "https://llm.example/v1", "anthropic": "https://llm.example"},
		// The fork form's model list, without the network; TestFlowFork asks
		// a real server.
		ListModels: func(context.Context, string, string, []string) ([]string, error) {
			return []string{"demo-large", "demo-small", "gpt-4o-mini"}, nil
		}}
}

// newDeck opens paths on a w×h screen.
func newDeck(t testing.TB, w, h int, paths ...string) *Deck {
	t.Helper()
	d := New(paths, testOptions())
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return d
}

// press sends keys to the deck one at a time, running any command they
// return that answers at once (a search, a diff), as the program would.
func press(d *Deck, keys ...tea.KeyMsg) {
	for _, k := range keys {
		_, cmd := d.Update(k)
		drain(d, cmd)
	}
}

// drain runs cmd and feeds its message back, except for timers and batches.
func drain(d *Deck, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	msg := cmd()
	switch msg.(type) {
	case nil, tea.BatchMsg, tickMsg, tea.QuitMsg:
		return
	}
	_, next := d.Update(msg)
	drain(d, next)
}

// openView opens the tape at path as a timeline view labelled label.
func openView(t testing.TB, d *Deck, path, label string) *timelineView {
	t.Helper()
	tl, err := timeline.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return newTimelineView(tl, d.st, label)
}

func runes(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

var (
	keyEnter      = tea.KeyMsg{Type: tea.KeyEnter}
	keyEsc        = tea.KeyMsg{Type: tea.KeyEsc}
	keyTab        = tea.KeyMsg{Type: tea.KeyTab}
	keyRight      = tea.KeyMsg{Type: tea.KeyRight}
	keyLeft       = tea.KeyMsg{Type: tea.KeyLeft}
	keyEnd        = tea.KeyMsg{Type: tea.KeyEnd}
	keyHome       = tea.KeyMsg{Type: tea.KeyHome}
	keyShiftRight = tea.KeyMsg{Type: tea.KeyShiftRight}
	keyShiftLeft  = tea.KeyMsg{Type: tea.KeyShiftLeft}
	keyCtrlC      = tea.KeyMsg{Type: tea.KeyCtrlC}
)

// typeText types s into the deck, one key per rune.
func typeText(d *Deck, s string) {
	for _, r := range s {
		press(d, runes(string(r)))
	}
}
