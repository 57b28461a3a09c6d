package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// markersPane lists a timeline's markers with their notes: enter puts the
// needle on the one selected, x clears it.
type markersPane struct {
	st   *Styles
	keys markersKeys
	w, h int
	tv   *timelineView
	at   []int // the marked frames, in order
	sel  int
	top  int
}

func newMarkersPane(st *Styles) *markersPane { return &markersPane{st: st, keys: newMarkersKeys()} }

// SetSize sets the pane's size, title included.
func (m *markersPane) SetSize(w, h int) { m.w, m.h = w, h }

// open lists tv's markers, the one at or after the needle selected.
func (m *markersPane) open(tv *timelineView) {
	m.tv, m.at, m.sel, m.top = tv, nil, 0, 0
	for i := range tv.markers {
		m.at = append(m.at, i)
	}
	slices.Sort(m.at)
	if i, _ := slices.BinarySearch(m.at, tv.cursor); i < len(m.at) {
		m.sel = i
	} else {
		m.sel = max(len(m.at)-1, 0)
	}
}

// ShortHelp is the markers pane's part of the help line.
func (m *markersPane) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Up, m.keys.Down, m.keys.Jump, m.keys.Clear, m.keys.Close}
}

// FullHelp is every markers pane key.
func (m *markersPane) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// update moves the selection; enter jumps there (done), esc closes
// (dismissed), x clears the marker selected.
func (m *markersPane) update(km tea.KeyMsg) (verdict, tea.Cmd) {
	k := m.keys
	switch {
	case key.Matches(km, k.Close):
		return dismissed, nil
	case len(m.at) == 0:
	case key.Matches(km, k.Up):
		m.sel = max(m.sel-1, 0)
	case key.Matches(km, k.Down):
		m.sel = min(m.sel+1, len(m.at)-1)
	case key.Matches(km, k.Jump):
		m.tv.jump(m.at[m.sel])
		return done, nil
	case key.Matches(km, k.Clear):
		i := m.at[m.sel]
		delete(m.tv.markers, i)
		delete(m.tv.notes, i)
		m.at = slices.Delete(m.at, m.sel, m.sel+1)
		m.sel = min(m.sel, max(len(m.at)-1, 0))
		return stay, m.tv.saveMarkers()
	}
	return stay, nil
}

// View draws the title and one row a marker: its frame, what it is, its
// note.
func (m *markersPane) View() string {
	rows := max(m.h-1, 1)
	title := fmt.Sprintf("markers · %s · enter goes there, x clears one, esc closes", counted(int64(len(m.at)), "marker", "markers"))
	lines := []string{m.st.TitleFocused.Render(fit(title, m.w))}
	if len(m.at) == 0 {
		lines = append(lines, m.st.Muted.Render(fit(" no markers: m sets one on the frame under the needle, M with a note", m.w)))
	}
	if m.sel < m.top {
		m.top = m.sel
	}
	if m.sel >= m.top+rows {
		m.top = m.sel - rows + 1
	}
	for j := m.top; j < len(m.at) && j < m.top+rows; j++ {
		i := m.at[j]
		r := m.tv.tl.Peek(i)
		what := r.Summary
		if r.Kind == timeline.KindStep {
			what = fmt.Sprintf("end of step %d", r.Step+1)
		}
		line := fmt.Sprintf(" frame %d · %s · %s", i, timeline.Clock(r.Time), termtext.Sanitize(what))
		if n := m.tv.notes[i]; n != "" {
			line = fmt.Sprintf(" frame %d · %s · %s", i, termtext.Sanitize(strings.ReplaceAll(n, "\n", " ")), termtext.Sanitize(what))
		}
		line = fit(line, m.w)
		if j == m.sel {
			line = m.st.Selected.Render(line)
		}
		lines = append(lines, line)
	}
	return box(lines, m.w, m.h)
}

// markersKeys work in the markers pane.
type markersKeys struct{ Up, Down, Jump, Clear, Close key.Binding }

func newMarkersKeys() markersKeys {
	return markersKeys{
		Up:    key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:  key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Jump:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go there")),
		Clear: key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "clear the marker")),
		Close: key.NewBinding(key.WithKeys("esc", "\""), key.WithHelp("esc", "close")),
	}
}
