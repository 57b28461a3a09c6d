package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// promptKind says what a prompt asks for.
type promptKind int

const (
	promptGoto   promptKind = iota // a frame number
	promptSearch                   // text to find
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
}

func newPrompt(st *Styles) *prompt {
	return &prompt{st: st, keys: newPromptKeys(), input: newField("", "", false)}
}

// SetSize sets the width.
func (m *prompt) SetSize(w, _ int) { m.w = w }

// Init does nothing.
func (m *prompt) Init() tea.Cmd { return nil }

// Update edits the answer.
func (m *prompt) Update(msg tea.Msg) (tea.Model, tea.Cmd) { return m.update(msg) }

func (m *prompt) update(msg tea.Msg) (*prompt, tea.Cmd) {
	if km, ok := msg.(tea.KeyMsg); ok {
		if m.selected && (km.Type == tea.KeyRunes || km.Type == tea.KeySpace || km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete) {
			m.input.SetValue("") // typing replaces the last answer; backspace clears it
			if km.Type == tea.KeyBackspace || km.Type == tea.KeyDelete {
				m.selected = false
				return m, nil
			}
		}
		m.selected = false
		m.input.update(km)
	}
	return m, nil
}

// ShortHelp is the prompt's keys.
func (m *prompt) ShortHelp() []key.Binding { return []key.Binding{m.keys.Submit, m.keys.Cancel} }

// FullHelp is the prompt's keys.
func (m *prompt) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// View draws the question and the answer so far.
func (m *prompt) View() string {
	q := "go to frame: "
	if m.kind == promptSearch {
		q = "search: "
	}
	w := max(m.w-len(q)-2, 1)
	if m.selected {
		return fit(" "+m.st.Accent.Render(q)+m.st.Accent.Reverse(true).Render(fit(m.input.Value(), w)), m.w)
	}
	return fit(" "+m.st.Accent.Render(q)+strings.Join(m.input.view(*m.st, w, 1, true), ""), m.w)
}

// openPrompt asks a question on the status line, with the last answer
// to it selected.
func (d *Deck) openPrompt(k promptKind) {
	d.prompt.kind = k
	last := d.lastGoto
	if k == promptSearch {
		last = d.lastQuery
	}
	d.prompt.input.SetValue(last)
	d.prompt.selected = last != ""
	d.pane = panePrompt
}

func (d *Deck) promptKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, d.prompt.keys.Cancel):
		d.pane = paneTracks
	case key.Matches(msg, d.prompt.keys.Submit):
		d.pane = paneTracks
		answer := strings.TrimSpace(d.prompt.input.Value())
		if d.prompt.kind == promptSearch {
			d.lastQuery = answer
			return d.search(answer, 1)
		}
		d.lastGoto = answer
		d.gotoFrame(answer)
	default:
		d.prompt, _ = d.prompt.update(msg)
	}
	return nil
}

func (d *Deck) gotoFrame(answer string) {
	tv := d.tracks[d.focus]
	n, err := strconv.Atoi(answer)
	if err != nil || n < 0 || n >= tv.tl.Len() {
		d.status = fmt.Sprintf("no frame %q: frames are 0 to %d", answer, tv.tl.Len()-1)
		return
	}
	tv.SetCursor(n)
	d.status = ""
}

// searchDoneMsg carries a search's result back.
type searchDoneMsg struct {
	track *timelineView
	query string
	found int
	err   error
	res   timeline.SearchResult
}

// search looks for query from the needle on, in a command: a search over
// a long tape reads every frame and blob. A new search cancels the last.
func (d *Deck) search(query string, dir int) tea.Cmd {
	if query == "" {
		return nil
	}
	if d.searching != nil {
		d.searching()
	}
	ctx, cancel := context.WithCancel(d.ctx)
	d.searching = cancel
	tv := d.tracks[d.focus]
	from := tv.cursor
	d.status = fmt.Sprintf("searching for %q…", query)
	return func() tea.Msg {
		r, err := tv.tl.SearchReport(ctx, query, from, dir)
		return searchDoneMsg{track: tv, query: query, found: r.Frame, err: err, res: r}
	}
}

func (d *Deck) searchDone(msg searchDoneMsg) {
	switch {
	case msg.err != nil:
		return // cancelled by a newer search
	case msg.found < 0:
		d.status = fmt.Sprintf("no frame holds %q", msg.query)
	default:
		msg.track.SetCursor(msg.found)
		d.status = fmt.Sprintf("%q found in frame %d · ; next · , previous", msg.query, msg.found)
	}
	d.status += unreadableNote(msg.res)
}

// unreadableNote says which frames a search could not read in full, so
// that "not found" never hides damage.
func unreadableNote(r timeline.SearchResult) string {
	switch {
	case r.First == nil:
		return ""
	case r.Unreadable > 1:
		return fmt.Sprintf(" · %s unreadable, first %s", counted(int64(r.Unreadable), "frame", "frames"), timeline.OneLine(r.First.Error(), 0))
	}
	return " · " + timeline.OneLine(r.First.Error(), 0)
}
