package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// promptKind says what a prompt asks for.
type promptKind int

const (
	promptGoto      promptKind = iota // a frame number
	promptSearch                      // text to find
	promptNote                        // a marker's note
	promptWrite                       // a file to write the frame to
	promptOverwrite                   // yes to replace that file
	promptCommand                     // a command line (:)
	promptFilter                      // text the rows shown must hold (|)
)

// prompt is the one-line question on the status line: go to which frame,
// search for what.
type prompt struct {
	st    *Styles
	keys  promptKeys
	kind  promptKind
	input field
	w     int
	// selected: the answer is the last one, shown selected: typing
	// replaces it, enter reuses it, a cursor key keeps it to edit.
	selected bool
	about    string // what the question is about (the file to overwrite)
	// history holds each kind's answers of this session, oldest first;
	// back is how far up/down went into it (0: what is being typed).
	history map[promptKind][]string
	back    int
	typed   string // what was typed before up went into the history
}

func newPrompt(st *Styles) *prompt {
	return &prompt{st: st, keys: newPromptKeys(), input: newField("", "", false)}
}

// SetSize sets the width.
func (m *prompt) SetSize(w, _ int) { m.w = w }

// ask opens the question, with the last answer to it selected.
func (m *prompt) ask(k promptKind, last string) {
	m.kind = k
	m.input.SetValue(last)
	m.selected = last != ""
	m.back, m.typed = 0, ""
}

// remember keeps an answer given in the kind's history (once, latest
// last).
func (m *prompt) remember() {
	a := m.answer()
	if a == "" || m.kind == promptOverwrite {
		return
	}
	if m.history == nil {
		m.history = map[promptKind][]string{}
	}
	h := slices.DeleteFunc(m.history[m.kind], func(s string) bool { return s == a })
	m.history[m.kind] = append(h, a)
}

// recall moves dir (-1 older, +1 newer) through the kind's history.
func (m *prompt) recall(dir int) {
	h := m.history[m.kind]
	back := min(max(m.back-dir, 0), len(h))
	if back == m.back {
		return
	}
	if m.back == 0 {
		m.typed = m.input.Value()
	}
	m.back, m.selected = back, false
	if back == 0 {
		m.input.SetValue(m.typed)
		return
	}
	m.input.SetValue(h[len(h)-back])
}

// answer is what was typed, trimmed.
func (m *prompt) answer() string { return strings.TrimSpace(m.input.Value()) }

// update edits the answer; enter gives it (done), esc withdraws the
// question (dismissed).
func (m *prompt) update(km tea.KeyMsg) verdict {
	switch {
	case key.Matches(km, m.keys.Cancel):
		return dismissed
	case key.Matches(km, m.keys.Submit):
		m.remember()
		return done
	case key.Matches(km, m.keys.Older):
		m.recall(-1)
		return stay
	case key.Matches(km, m.keys.Newer):
		m.recall(1)
		return stay
	case m.kind == promptCommand && key.Matches(km, m.keys.Complete):
		m.input.SetValue(completeCommand(m.input.Value()))
		m.selected = false
		return stay
	}
	if m.selected && (km.Type == tea.KeyRunes || km.Type == tea.KeySpace || km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete) {
		m.input.SetValue("") // typing replaces the last answer; backspace clears it
		if km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete {
			m.selected = false
			return stay
		}
	}
	m.selected = false
	m.input.update(km)
	return stay
}

// ShortHelp is the prompt's keys.
func (m *prompt) ShortHelp() []key.Binding {
	b := []key.Binding{m.keys.Submit, m.keys.Cancel}
	if len(m.history[m.kind]) > 0 {
		b = append(b, m.keys.Older)
	}
	if m.kind == promptCommand {
		b = append(b, m.keys.Complete)
	}
	return b
}

// FullHelp is the prompt's keys.
func (m *prompt) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// View draws the question and the answer so far.
func (m *prompt) View() string {
	q := "go to frame: "
	switch m.kind {
	case promptSearch:
		q = "search: "
	case promptNote:
		q = "note on this marker: "
	case promptWrite:
		q = "write this frame to: "
	case promptOverwrite:
		q = termtext.Quote(m.about) + " exists: overwrite it? (y, or esc): "
	case promptCommand:
		q = ":"
	case promptFilter:
		q = "only rows holding: "
	}
	w := max(m.w-len(q)-2, 1)
	if m.selected {
		return fit(" "+m.st.Accent.Render(q)+m.st.Accent.Reverse(true).Render(fit(m.input.Value(), w)), m.w)
	}
	return fit(" "+m.st.Accent.Render(q)+strings.Join(m.input.view(*m.st, w, 1, true), ""), m.w)
}

// promptKeys answer the one-line prompts (go to frame, search).
type promptKeys struct{ Submit, Cancel, Older, Newer, Complete key.Binding }

func newPromptKeys() promptKeys {
	return promptKeys{
		Submit:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go")),
		Cancel:   key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
		Older:    key.NewBinding(key.WithKeys("up", "ctrl+p"), key.WithHelp("↑/↓", "earlier answers")),
		Newer:    key.NewBinding(key.WithKeys("down", "ctrl+n"), key.WithHelp("↓", "later answers")),
		Complete: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
	}
}
