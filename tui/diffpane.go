package tui

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

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
	cur     int   // the change the counter names (changes' index), -1 before the first
	first   int   // line of the first-divergence banner, -1 when none
}

// diffReadyMsg brings a finished comparison.
type diffReadyMsg struct {
	res *diffview.Result
	err error
}

func newDiffPane(st *Styles) *diffPane {
	return &diffPane{st: st, keys: newDiffKeys(), vp: viewport.New(0, 0), first: -1, cur: -1}
}

// SetSize sets the pane's size, title included, and lays the diff out again.
func (m *diffPane) SetSize(w, h int) {
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.render()
}

// ShortHelp is the diff pane's part of the help line.
func (m *diffPane) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Up, m.keys.Down, m.keys.NextChange, m.keys.PrevChange, m.keys.Close}
}

// syncKeys turns off the keys that would not move the view from where it
// is: up and home at the top, down and end at the bottom, the previous
// change before the first and the next after the last.
func (m *diffPane) syncKeys() {
	k := &m.keys
	top, bottom := m.vp.AtTop(), m.vp.AtBottom()
	for _, b := range []*key.Binding{&k.Up, &k.PageUp, &k.Top} {
		b.SetEnabled(!top)
	}
	for _, b := range []*key.Binding{&k.Down, &k.PageDown, &k.Bottom} {
		b.SetEnabled(!bottom)
	}
	k.NextChange.SetEnabled(m.cur < len(m.changes)-1)
	k.PrevChange.SetEnabled(m.cur > 0)
}

// FullHelp is every diff pane key.
func (m *diffPane) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.NextChange, k.PrevChange, k.Close}}
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
		m.follow()
	case key.Matches(km, k.PageDown):
		m.vp.PageDown()
		m.follow()
	case key.Matches(km, k.Top):
		m.vp.GotoTop()
		m.follow()
	case key.Matches(km, k.Bottom):
		m.vp.GotoBottom()
		m.follow()
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
	m.follow()
}

// jump moves to the next (or previous) change and scrolls it to the top
// of the view, as far as the view scrolls: near the end the counter moves
// on while the view stays.
func (m *diffPane) jump(dir int) {
	if len(m.changes) == 0 {
		return
	}
	m.cur = min(max(m.cur+dir, 0), len(m.changes)-1)
	m.vp.SetYOffset(max(m.changes[m.cur]-1, 0))
}

// follow sets the current change from the view after a scroll: the last
// one that starts at or above the view's second line (jump puts a change
// there); -1 above the first.
func (m *diffPane) follow() {
	m.cur = -1
	for i, l := range m.changes {
		if l <= m.vp.YOffset+1 {
			m.cur = i
		}
	}
}

// counter says where the view is among the changes: "change 3/10" once
// it reaches one, else how many there are.
func (m *diffPane) counter() string {
	if m.cur >= 0 {
		return fmt.Sprintf("change %d/%d", m.cur+1, len(m.changes))
	}
	return counted(int64(len(m.changes)), "change", "changes")
}

// labelRe finds a frame label ("    17 llm.request ") at the start of a column.
var labelRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ *\d+ [a-z]`) })

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
			if labelRe().MatchString(ansi.Cut(l, 0, col)) || labelRe().MatchString(ansi.Cut(l, col+3, 2*col+3)) {
				m.changes = append(m.changes, i)
			}
		}
	}
	// Laid out at diffview.MinWidth at least: a narrower pane cuts each
	// line with "…", never a number without a word (the viewport cut
	// "+285" to "+28").
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) > m.w {
			lines[i] = ansi.Truncate(l, m.w, "…")
		}
	}
	m.vp.SetContent(strings.Join(lines, "\n"))
	if m.first >= 0 {
		m.vp.SetYOffset(m.first)
	}
	m.follow()
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
		title = fmt.Sprintf("diff · %s ⟷ %s · %s", m.res.Left.Name, m.res.Right.Name, m.counter())
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
	Up, Down, PageUp, PageDown, Top, Bottom, NextChange, PrevChange, Close key.Binding
}

func newDiffKeys() diffKeys {
	return diffKeys{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Top:        key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("home/g", "top")),
		Bottom:     key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "bottom")),
		NextChange: key.NewBinding(key.WithKeys("n", "right", "l"), key.WithHelp("n/→", "next change")),
		PrevChange: key.NewBinding(key.WithKeys("N", "left", "h"), key.WithHelp("N/←", "prev change")),
		Close:      key.NewBinding(key.WithKeys("esc", "d"), key.WithHelp("esc/d", "close diff")),
	}
}
