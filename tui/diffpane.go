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
	"github.com/jukebox-os/jukebox/timeline"
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

// Init does nothing.
func (m *diffPane) Init() tea.Cmd { return nil }

// Update scrolls.
func (m *diffPane) Update(msg tea.Msg) (tea.Model, tea.Cmd) { return m.update(msg) }

// ShortHelp is the diff pane's part of the help line.
func (m *diffPane) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Down, m.keys.NextChange, m.keys.PrevChange, m.keys.Close}
}

// FullHelp is every diff pane key.
func (m *diffPane) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown}, {k.NextChange, k.PrevChange, k.Close}}
}

func (m *diffPane) update(msg tea.Msg) (*diffPane, tea.Cmd) {
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	switch k := m.keys; {
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
	return m, nil
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

// toggleDiff opens the diff of the two timelines (or closes it).
func (d *Deck) toggleDiff() tea.Cmd {
	if d.pane == paneDiff {
		d.pane = paneTracks
		return nil
	}
	if len(d.tracks) != 2 {
		return nil
	}
	d.pane, d.diff.loading, d.diff.err = paneDiff, true, nil
	d.play.playing = false
	left, right := d.tracks[0].tl, d.tracks[1].tl
	return func() tea.Msg {
		a, err := timeline.ForDiff(left.Tape(), baseName(left.Path()))
		if err != nil {
			return diffReadyMsg{err: err}
		}
		b, err := timeline.ForDiff(right.Tape(), baseName(right.Path()))
		if err != nil {
			return diffReadyMsg{err: err}
		}
		return diffReadyMsg{res: diffview.Compare(a, b)}
	}
}

// diffReady shows the comparison and puts each timeline's needle on its
// side of the first divergence.
func (d *Deck) diffReady(msg diffReadyMsg) {
	d.diff.loading, d.diff.res, d.diff.err = false, msg.res, msg.err
	d.diff.render()
	if msg.res == nil || len(d.tracks) != 2 {
		return
	}
	if dv, ok := msg.res.Divergence(); ok {
		for i, seq := range []int{dv.Left, dv.Right} {
			d.tracks[i].diverge = seq
			if seq >= 0 {
				d.tracks[i].SetCursor(seq)
			}
		}
	}
}

// diffKey handles a key in the diff pane.
func (d *Deck) diffKey(msg tea.KeyMsg) tea.Cmd {
	if key.Matches(msg, d.diff.keys.Close) {
		d.pane = paneTracks
		return nil
	}
	d.diff, _ = d.diff.update(msg)
	return nil
}
