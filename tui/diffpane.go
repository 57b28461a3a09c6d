package tui

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/jukebox-os/jukebox/diffview"
)

// diffPane shows two timelines side by side, aligned by diffview: one
// scrolling view, so both columns always move together, opened at the
// first divergence; n and N jump from change to change.
type diffPane struct {
	st      *Styles
	keys    diffKeys
	vp      viewport.Model
	w, h    int
	res     *diffview.Result
	err     error
	loading bool
	changes []int // lines where a changed, added or removed frame starts
	first   int   // line of the first-divergence banner, -1 when none
}

// diffReadyMsg brings a finished comparison.
type diffReadyMsg struct {
	res *diffview.Result
	err error
}

func newDiffPane(st *Styles) *diffPane {
	return &diffPane{st: st, keys: newDiffKeys(), vp: viewport.New(0, 0), first: -1}
}

// SetSize sets the pane's size, title included, and lays the diff out again.
func (m *diffPane) SetSize(w, h int) {
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.render()
}

// ShortHelp is the diff pane's part of the help line.
func (m *diffPane) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Down, m.keys.NextChange, m.keys.PrevChange, m.keys.Close}
}

// FullHelp is every diff pane key.
func (m *diffPane) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown}, {k.NextChange, k.PrevChange, k.Close}}
}

// update scrolls; esc or d closes the pane.
func (m *diffPane) update(km tea.KeyMsg) verdict {
	switch k := m.keys; {
	case key.Matches(km, k.Close):
		return dismissed
	case key.Matches(km, k.Up):
		m.scroll(-1)
	case key.Matches(km, k.Down):
		m.scroll(1)
	case key.Matches(km, k.PageUp):
		m.vp.PageUp()
	case key.Matches(km, k.PageDown):
		m.vp.PageDown()
	case key.Matches(km, k.NextChange):
		m.jump(1)
	case key.Matches(km, k.PrevChange):
		m.jump(-1)
	}
	return stay
}

func (m *diffPane) scroll(n int) {
	if n < 0 {
		m.vp.ScrollUp(-n)
	} else if n > 0 {
		m.vp.ScrollDown(n)
	}
}

// jump scrolls to the next (or previous) change.
func (m *diffPane) jump(dir int) {
	y := m.vp.YOffset
	if dir > 0 {
		for _, l := range m.changes {
			if l > y+1 {
				m.vp.SetYOffset(l - 1)
				return
			}
		}
		return
	}
	for i := len(m.changes) - 1; i >= 0; i-- {
		if l := m.changes[i]; l < y+1 {
			m.vp.SetYOffset(max(l-1, 0))
			return
		}
	}
}

// labelRe finds a frame label ("    17 llm.request ") at the start of a column.
var labelRe = regexp.MustCompile(`^ *\d+ [a-z]`)

// render lays the diff out for the width and finds the changes in it.
func (m *diffPane) render() {
	if m.res == nil || m.w == 0 {
		return
	}
	o := diffview.Options{Width: m.w, Styles: m.st.Diff}
	text := strings.TrimRight(diffview.SideBySide(m.res, o), "\n")
	o.Styles = diffview.Styles{Marks: m.st.Diff.Marks} // the same layout, without colour
	plain := strings.Split(strings.TrimRight(diffview.SideBySide(m.res, o), "\n"), "\n")
	col := (max(m.w, diffview.MinWidth) - 3) / 2
	for _, l := range plain { // the heading's rule crosses the gutter: "───┼───"
		if i := strings.Index(l, "─┼─"); i >= 0 {
			col = ansi.StringWidth(l[:i])
			break
		}
	}
	m.changes, m.first = nil, -1
	for i, l := range plain {
		if strings.Contains(l, "▶ first divergence") && m.first < 0 {
			m.first = i
		}
		g := strings.TrimRight(ansi.Cut(l, col, col+3), " ")
		if g == " ~" || g == " <" || g == " >" {
			if labelRe.MatchString(ansi.Cut(l, 0, col)) || labelRe.MatchString(ansi.Cut(l, col+3, 2*col+3)) {
				m.changes = append(m.changes, i)
			}
		}
	}
	m.vp.SetContent(text)
	if m.first >= 0 {
		m.vp.SetYOffset(m.first)
	}
}

// View draws the title and the diff.
func (m *diffPane) View() string {
	title := "diff"
	switch {
	case m.loading:
		title = "diff · aligning the timelines…"
	case m.err != nil:
		title = "diff · " + m.err.Error()
	case m.res != nil:
		title = fmt.Sprintf("diff · %s ⟷ %s · %s", m.res.Left.Name, m.res.Right.Name, counted(int64(len(m.changes)), "change", "changes"))
		if d, ok := m.res.Divergence(); ok {
			title += " · first divergence: " + d.Text
		} else {
			title += " · no divergence"
		}
	}
	return m.st.TitleFocused.Render(fit(title, m.w)) + "\n" + box(strings.Split(m.vp.View(), "\n"), m.w, m.vp.Height)
}

// diffKeys scroll the diff pane; both columns move together.
type diffKeys struct {
	Up, Down, PageUp, PageDown, NextChange, PrevChange, Close key.Binding
}

func newDiffKeys() diffKeys {
	return diffKeys{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		NextChange: key.NewBinding(key.WithKeys("n", "right", "l"), key.WithHelp("n/→", "next change")),
		PrevChange: key.NewBinding(key.WithKeys("N", "left", "h"), key.WithHelp("N/←", "prev change")),
		Close:      key.NewBinding(key.WithKeys("esc", "d"), key.WithHelp("esc/d", "close diff")),
	}
}
