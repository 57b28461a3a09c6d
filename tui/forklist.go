package tui

// The fork list (b): the tape opened, the forks run this session, and the
// tapes beside them that were forked from one of these (found by chain
// head, in the background), as a tree. enter shows the chosen fork beside
// its parent; the tape opened alone shows it alone.

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// forkEntry is one tape of the family.
type forkEntry struct {
	path   string
	parent string // the parent's path; "" for the tape opened
	head   string // chain head, hex; "" until known
	at     int    // the frame of the parent it was forked at
	what   string // its overrides, in short
	state  string // running, exit 0, failed: …
	found  bool   // found beside the others, not forked this session
	name   string // the name it was given (its run's), "" when none
}

// forkList is the list pane: the family as a tree, a cursor on one.
type forkList struct {
	st       *Styles
	keys     forkListKeys
	rows     []int // family indices, in tree order
	depth    []int
	cursor   int
	top      int
	w, h     int
	scanning bool
	note     string      // how the search went
	family   []forkEntry // the deck's, as last arranged
	shown    string      // the path of the tape on screen (marked ●)
}

// forkScanMsg brings the tapes found beside the family.
type forkScanMsg struct {
	kin       []timeline.Kin
	truncated bool
	err       error
}

func newForkList(st *Styles) *forkList { return &forkList{st: st, keys: newForkListKeys()} }

// SetSize sets the pane's size, its title included.
func (m *forkList) SetSize(w, h int) { m.w, m.h = w, h }

// ShortHelp is the fork list's part of the help line.
func (m *forkList) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Down, m.keys.Show, m.keys.Close}
}

// FullHelp is every fork list key.
func (m *forkList) FullHelp() [][]key.Binding {
	return [][]key.Binding{{m.keys.Up, m.keys.Down, m.keys.Show, m.keys.Close}}
}

// update moves the cursor; enter chooses, esc or b closes.
func (m *forkList) update(km tea.KeyMsg) verdict {
	switch k := m.keys; {
	case key.Matches(km, k.Close):
		return dismissed
	case key.Matches(km, k.Show):
		return done
	case key.Matches(km, k.Up):
		m.cursor = max(m.cursor-1, 0)
	case key.Matches(km, k.Down):
		m.cursor = min(m.cursor+1, len(m.rows)-1)
	}
	return stay
}

// arrange lays the family out as a tree: each tape under its parent, in
// the order found; the cursor stays on the same tape.
func (m *forkList) arrange(family []forkEntry) {
	var was string
	if m.cursor < len(m.rows) {
		was = m.family[m.rows[m.cursor]].path
	}
	m.family = family
	m.rows, m.depth = m.rows[:0], m.depth[:0]
	placed := make([]bool, len(family))
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		for i, e := range family {
			if !placed[i] && e.parent == parent {
				placed[i] = true
				m.rows, m.depth = append(m.rows, i), append(m.depth, depth)
				walk(e.path, depth+1)
			}
		}
	}
	walk("", 0)
	for i := range family { // a parent no longer in the family: at the top level
		if !placed[i] {
			placed[i] = true
			m.rows, m.depth = append(m.rows, i), append(m.depth, 0)
			walk(family[i].path, 1)
		}
	}
	m.cursor = 0
	for j, i := range m.rows {
		if family[i].path == was {
			m.cursor = j
		}
	}
}

// View draws the list.
func (m *forkList) View() string {
	family, shown := m.family, m.shown
	title := fmt.Sprintf("forks · %s", counted(int64(len(family)), "tape", "tapes"))
	if m.scanning {
		title += " · looking for forks beside them…"
	} else if m.note != "" {
		title += " · " + m.note
	}
	lines := []string{m.st.TitleFocused.Render(fit(title, m.w))}
	body := max(m.h-1, 1)
	if m.cursor < m.top {
		m.top = m.cursor
	} else if m.cursor >= m.top+body {
		m.top = m.cursor - body + 1
	}
	for j := m.top; j < min(len(m.rows), m.top+body); j++ {
		e := family[m.rows[j]]
		gutter := "  "
		if e.path == shown {
			gutter = "● "
		}
		name := strings.Repeat("  ", m.depth[j])
		if m.depth[j] > 0 {
			name = strings.Repeat("  ", m.depth[j]-1) + "└ "
		}
		name += termtext.Sanitize(baseName(e.path))
		facts := []string{}
		if e.parent == "" {
			facts = append(facts, "the tape opened")
		} else {
			facts = append(facts, fmt.Sprintf("at frame %d", e.at))
		}
		if e.name != "" && e.parent != "" && e.name != family[0].name { // a name of its own
			facts = append(facts, "“"+termtext.Sanitize(e.name)+"”")
		}
		facts = append(facts, e.what, e.state)
		if e.found {
			facts = append(facts, "found beside it")
		}
		said := strings.Join(slices.DeleteFunc(facts, func(s string) bool { return s == "" }), " · ")
		line := gutter + name + "  " + m.st.Muted.Render(said)
		if j == m.cursor {
			line = m.st.Selected.Render(fit(gutter+name+"  "+said, m.w))
		}
		lines = append(lines, fit(line, m.w))
	}
	return box(lines, m.w, m.h)
}

// forkListKeys move over the list.
type forkListKeys struct {
	Up, Down, Show, Close key.Binding
}

func newForkListKeys() forkListKeys {
	return forkListKeys{
		Up:    key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:  key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Show:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "show beside its parent")),
		Close: key.NewBinding(key.WithKeys("esc", "b"), key.WithHelp("esc/b", "close")),
	}
}

// overridesText is a fork's overrides in short: "model demo-large ·
// system prompt · temperature 0.5 · every later call".
func overridesText(raw json.RawMessage) string {
	var o engine.Overrides
	if len(raw) == 0 || json.Unmarshal(raw, &o) != nil {
		return ""
	}
	var parts []string
	if o.Model != "" {
		parts = append(parts, "model "+termtext.Sanitize(o.Model))
	}
	if o.SystemPrompt != nil {
		parts = append(parts, "system prompt")
	}
	if o.Temperature != nil {
		parts = append(parts, fmt.Sprintf("temperature %g", *o.Temperature))
	}
	if n := len(o.Set); n > 0 {
		parts = append(parts, counted(int64(n), "field set", "fields set"))
	}
	if len(o.Patch) > 0 {
		parts = append(parts, "patch")
	}
	if len(parts) == 0 {
		return "no change"
	}
	if o.Scope == engine.ScopeOnce {
		parts = append(parts, "that call only")
	}
	return strings.Join(parts, ", ")
}

// openForks opens the fork list and looks for forks beside the family's
// tapes in the background.
func (d *Deck) openForks() tea.Cmd {
	d.pane = paneForks
	d.play.playing = false
	d.forks.arrange(d.family)
	d.forks.shown = d.shownFork()
	for j, i := range d.forks.rows {
		if d.family[i].path == d.forks.shown {
			d.forks.cursor = j
		}
	}
	if d.forks.scanning {
		return nil
	}
	d.forks.scanning = true
	var dirs, stores, heads []string
	for _, e := range d.family {
		if e.head != "" {
			heads = append(heads, e.head)
		}
		switch {
		case !timeline.IsRemote(e.path):
			if dir := filepath.Dir(e.path); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		case d.o.StoreKin != nil && len(stores) == 0:
			stores = append(stores, e.path) // its store is looked through (once)
		}
	}
	ctx, storeKin := d.ctx, d.o.StoreKin
	return func() tea.Msg {
		all, truncated, err := timeline.Around(ctx, dirs)
		for _, url := range stores {
			kin, serr := storeKin(ctx, url)
			all, err = append(all, kin...), errors.Join(err, serr)
		}
		return forkScanMsg{timeline.DescendantsIn(all, heads), truncated, err}
	}
}

// forksFound adds the tapes found to the family.
func (d *Deck) forksFound(msg forkScanMsg) {
	d.forks.scanning = false
	switch {
	case msg.err != nil:
		d.forks.note = "looking for forks: " + msg.err.Error()
	case msg.truncated:
		d.forks.note = "more tapes beside it than were read"
	default:
		d.forks.note = ""
	}
	byHead := map[string]string{}
	for _, e := range d.family {
		if e.head != "" {
			byHead[e.head] = e.path
		}
	}
	for _, k := range msg.kin {
		byHead[k.Head] = k.Path
		state := "no end on the tape"
		if k.End != nil {
			state = engine.EndText(*k.End)
		}
		if i := d.familyIndex(k.Path); i >= 0 {
			d.family[i].head = k.Head
			continue
		}
		d.family = append(d.family, forkEntry{path: k.Path, parent: byHead[k.Parent.Tape], head: k.Head, at: int(k.Parent.Frame),
			what: overridesText(k.Parent.Overrides), state: state, found: true, name: k.Name})
	}
	d.forks.arrange(d.family)
}

func (d *Deck) familyIndex(path string) int {
	return slices.IndexFunc(d.family, func(e forkEntry) bool { return e.path == path })
}

// shownFork is the path of the fork on screen beside its parent, else of
// the one tape shown.
func (d *Deck) shownFork() string {
	return d.tracks[len(d.tracks)-1].tl.Path()
}

// forksKey gives a key to the fork list and shows the tape chosen.
func (d *Deck) forksKey(msg tea.KeyMsg) tea.Cmd {
	switch d.forks.update(msg) {
	case dismissed:
		d.pane = paneTracks
	case done:
		if len(d.forks.rows) == 0 {
			return nil
		}
		e := d.family[d.forks.rows[d.forks.cursor]]
		if err := d.showFork(e); err != nil {
			d.status = fmt.Sprintf("%s: %v", termtext.Quote(e.path), err)
			return nil
		}
		d.pane = paneTracks
		return tea.Batch(d.startChecks()...)
	}
	return nil
}

// showFork puts e beside its parent (the tape opened alone when e is it).
func (d *Deck) showFork(e forkEntry) error {
	if d.run != nil && d.run.running() && e.path != d.run.tape {
		return fmt.Errorf("a fork is running: ctrl+c stops it first")
	}
	paths := []string{e.path}
	if e.parent != "" {
		paths = []string{e.parent, e.path}
	}
	var views []*timelineView
	for _, p := range paths {
		if tv := d.trackOf(p); tv != nil {
			views = append(views, tv)
			continue
		}
		tl, err := timeline.OpenWith(p, d.o.Remote)
		if err != nil {
			for _, v := range views {
				if d.trackOf(v.tl.Path()) == nil {
					v.tl.Close()
				}
			}
			return err
		}
		if !d.costsLater(tl) {
			tl.IndexCosts(d.ctx)
		}
		tv := newTimelineView(tl, d.st, "")
		d.o.Keys.apply(&tv.keys)
		if d.o.KeepMarkers {
			tv.loadMarkers()
		}
		views = append(views, tv)
	}
	for _, t := range d.tracks {
		if !slices.Contains(views, t) {
			t.tl.Close()
		}
	}
	views[0].label, views[0].forkAt, views[0].diverge = "", -1, -1
	if len(views) == 2 {
		views[0].label, views[0].forkAt = "parent", e.at
		views[1].label, views[1].forkAt, views[1].diverge = "fork", -1, -1
	}
	d.tracks, d.focus = views, len(views)-1
	if d.run != nil && d.run.tape != e.path {
		d.run = nil // its tape stays in the list
	}
	d.status = "showing " + termtext.Quote(baseName(e.path))
	if e.parent != "" {
		d.status += " beside its parent " + termtext.Quote(baseName(e.parent)) + " · d diffs them"
	}
	d.layout()
	return nil
}

// trackOf is the timeline view on screen of the tape at path, or nil.
func (d *Deck) trackOf(path string) *timelineView {
	for _, t := range d.tracks {
		if t.tl.Path() == path {
			return t
		}
	}
	return nil
}

// forkFamily starts the family with the tape opened: its head, so the
// tapes forked from it can be found.
func (d *Deck) forkFamily() {
	if len(d.tracks) != 1 {
		return // two tapes to compare: not a family
	}
	tl := d.tracks[0].tl
	name := ""
	if rs := tl.Start(); rs != nil {
		name = rs.Name
	}
	d.family = []forkEntry{{path: tl.Path(), head: tl.Tape().Head().String(), state: exitWord(tl), what: bisectNote(tl), name: name}}
}

// bisectNote is what jukebox bisect --check found of the tape opened (its
// sidecar's bisect.json), for its row of the fork list; "" when it has
// not been bisected (or lies in a store: not read on the way to the
// first screen).
func bisectNote(tl *timeline.Timeline) string {
	if timeline.IsRemote(tl.Path()) {
		return ""
	}
	s, err := timeline.ReadBisect(tl.Tape())
	switch {
	case err != nil:
		return "bisect.json does not read: " + err.Error()
	case s == nil || s.Found == nil:
		return ""
	case s.Found.Call < 0:
		return "bisect: no point of no return (" + s.Found.Change + ")"
	}
	return fmt.Sprintf("bisect: point of no return after frame %d, model call %d (%s)", s.Found.Frame, s.Found.Call, s.Found.Change)
}
