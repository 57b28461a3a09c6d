package tui

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// timelineView lists a tape's frames, one row each, with the needle on one
// of them. It is virtualised: View reads only the rows on screen, so a tape
// of any length scrolls at the same speed.
type timelineView struct {
	tl     *timeline.Timeline
	st     *Styles
	keys   timelineKeys
	label  string // "parent", "fork", "left", "right" or ""
	cursor int
	// filterHome is the frame the needle was on when a kind filter (F)
	// began, and filterMoved where the filters last moved it (a frame
	// they hid): back to every kind, a needle the user has not moved
	// since goes home (-1: none). Cycling F went on moving it forward.
	filterHome, filterMoved int
	// jumps are the frames the needle jumped from (n, t, e, ', g, /, home,
	// end), oldest first; back is where [ and ctrl+o have gone back to
	// (len(jumps): not gone back). See jump.
	jumps   []int
	back    int
	offset  int
	w, h    int
	focused bool
	markers map[int]bool
	// notes are the markers' notes, from the sidecar file (markers.json);
	// markersErr is why that file did not read.
	notes       map[int]string
	markersErr  error
	keepMarkers bool // markers are kept beside the tape (Options.KeepMarkers)
	forkAt      int  // the frame a fork was taken at, -1 when none
	diverge     int  // this side's first divergent frame, -1 when unknown
	follow      bool // keep the needle on the last frame while the tape grows
	live        bool // the tape is being written (a running fork, a recording)
	// recording: the tape is being recorded by another run, and followed
	// as it grows (follow.go); size is its file's size when last opened.
	recording bool
	size      int64
	// view says which rows there are (folded output, a filter, one row
	// per step); entries are those rows, nil when every frame is one.
	view    timeline.ViewOptions
	entries []timeline.Entry
	viewErr error
	sums    map[int]timeline.StepSummary // step rows drawn, by first frame (a step is read once)
	// projecting is a view being listed in the background (a filter that
	// reads frames, on a long tape); the rows shown stay until it ends.
	projecting *projection
}

// slowViewFrames is the length from which a view that reads frames (the
// error filter) is listed in the background.
const slowViewFrames = 20_000

// projection is a view being listed in the background.
type projection struct {
	view       timeline.ViewOptions
	what       string // said when it is done
	cancel     context.CancelFunc
	read, rows atomic.Int64
	n          int
	notify     chan struct{}
	done       chan struct{}
	entries    []timeline.Entry
	err        error
}

// projectedMsg says a background view read more frames, or ended.
type projectedMsg struct {
	tv *timelineView
	p  *projection
}

// projectLater lists the view in the background, saying what when done.
func (m *timelineView) projectLater(what string) tea.Cmd {
	m.stopProjecting()
	ctx, cancel := context.WithCancel(context.Background())
	p := &projection{view: m.view, what: what, cancel: cancel, n: m.tl.Len(), notify: make(chan struct{}, 1), done: make(chan struct{})}
	m.projecting = p
	go func() {
		defer close(p.done)
		p.entries, p.err = m.tl.ViewProgress(ctx, p.view, func(read, rows int) {
			p.read.Store(int64(read))
			p.rows.Store(int64(rows))
			select {
			case p.notify <- struct{}{}:
			default:
			}
		})
	}()
	return m.waitProjection(p)
}

func (m *timelineView) waitProjection(p *projection) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-p.notify:
		case <-p.done:
		}
		return projectedMsg{m, p}
	}
}

// projected takes a background view's progress, and its rows once done.
func (m *timelineView) projected(p *projection) (tea.Cmd, string) {
	if m.projecting != p {
		return nil, ""
	}
	select {
	case <-p.done:
	default:
		return m.waitProjection(p), ""
	}
	m.projecting = nil
	if p.err != nil {
		return nil, ""
	}
	m.setEntries(p.entries)
	return nil, p.what
}

// stopProjecting cancels a view being listed in the background.
func (m *timelineView) stopProjecting() {
	if m.projecting != nil {
		m.projecting.cancel()
		m.projecting = nil
	}
}

// projectingText is a background view's progress for the status line.
func (m *timelineView) projectingText() string {
	p := m.projecting
	if p == nil {
		return ""
	}
	return fmt.Sprintf("listing %s: %s so far · %d%%", p.view.Only, counted(p.rows.Load(), "row", "rows"), p.read.Load()*100/int64(max(p.n, 1)))
}

// slowView reports whether listing the view reads frames on a long tape.
func (m *timelineView) slowView() bool {
	return m.view.Only&timeline.ClassErrors != 0 && !m.view.Steps && m.tl.Len() > slowViewFrames
}

// noStep says why a step key does nothing: no whole step yet, or where
// the needle is.
func (m *timelineView) noStep(where string) string {
	if m.tl.StepCount() == 0 {
		return "this tape has no step: no model call"
	}
	return where
}

// growing reports whether the tape is still being written.
func (m *timelineView) growing() bool { return m.live }

func newTimelineView(tl *timeline.Timeline, st *Styles, label string) *timelineView {
	m := &timelineView{tl: tl, st: st, keys: newTimelineKeys(), label: label, markers: map[int]bool{}, forkAt: -1, diverge: -1, filterHome: -1, filterMoved: -1,
		view: timeline.ViewOptions{Fold: true}}
	m.project()
	return m
}

// setTimeline shows tl (the same tape, grown) in the same view.
func (m *timelineView) setTimeline(tl *timeline.Timeline) {
	m.tl = tl
	m.project()
}

// project lists the rows of the view.
func (m *timelineView) project() {
	m.stopProjecting()
	m.entries, m.viewErr, m.sums = nil, nil, nil
	if m.view.Identity() {
		return
	}
	entries, err := m.tl.View(context.Background(), m.view)
	if err != nil {
		m.viewErr = err
		return
	}
	m.setEntries(entries)
}

// setEntries shows the rows of a view.
func (m *timelineView) setEntries(entries []timeline.Entry) {
	m.entries, m.viewErr, m.sums = nil, nil, nil
	if m.view.Identity() {
		return
	}
	m.entries = entries
	// The needle stays on a row: on the next one shown when the view
	// hides its frame.
	if r := m.rowOf(m.cursor); len(entries) > 0 && m.entry(r).Last < m.cursor {
		m.cursor = m.entry(min(r+1, len(entries)-1)).First
		m.filterMoved = m.cursor
	}
	m.scroll()
}

// n is the number of rows.
func (m *timelineView) n() int {
	if m.entries == nil {
		return m.tl.Len()
	}
	return len(m.entries)
}

// entry is row r.
func (m *timelineView) entry(r int) timeline.Entry {
	if m.entries == nil {
		return timeline.Entry{First: r, Last: r}
	}
	return m.entries[r]
}

// rowOf is the row that shows frame i, or the row before it when the view
// hides it.
func (m *timelineView) rowOf(i int) int {
	if m.entries == nil {
		return i
	}
	return timeline.EntryOf(m.entries, i)
}

// toRow moves the needle to row r (clamped).
func (m *timelineView) toRow(r int) {
	if m.n() == 0 {
		return
	}
	m.SetCursor(m.entry(max(0, min(r, m.n()-1))).First)
}

// step moves the needle by delta rows. From a frame the view hides, one
// row back is the row before it.
func (m *timelineView) step(delta int) {
	r := m.rowOf(m.cursor)
	if delta < 0 && m.entry(r).Last < m.cursor {
		delta++
	}
	m.toRow(r + delta)
}

// SetSize sets the pane's size, title line included.
func (m *timelineView) SetSize(w, h int) { m.w, m.h = w, h; m.scroll() }

// ShortHelp is the timeline's part of the help line.
func (m *timelineView) ShortHelp() []key.Binding {
	k := m.keys
	return []key.Binding{k.Prev, k.Next, k.NextStep, k.NextLLM, k.Search, k.Play}
}

// FullHelp is every timeline key, in columns.
func (m *timelineView) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{
		{k.Prev, k.Next, k.PrevStep, k.NextStep, k.Home, k.End, k.Goto, k.Command},
		{k.NextLLM, k.NextTool, k.NextError, k.Search, k.Grep, k.SearchNext, k.JumpBack},
		{k.Mark, k.Note, k.NextMark, k.Markers, k.Play, k.Speed, k.Idle, k.PageUp, k.PageDown, k.Read, k.Scale},
		{k.Fold, k.FoldAll, k.Filter, k.Steps, k.Table, k.Pager, k.Editor, k.Copy, k.Curl, k.Write},
	}
}

// rows is how many frame rows fit under the title.
func (m *timelineView) rows() int { return max(m.h-1, 1) }

// maxJumps bounds the jump list.
const maxJumps = 100

// jump moves the needle to frame i as a jump: where it was goes on the jump
// list (what was ahead of a step back is dropped), for [ to go back to.
func (m *timelineView) jump(i int) {
	if i == m.cursor {
		return
	}
	m.jumps = append(m.jumps[:min(m.back, len(m.jumps))], m.cursor)
	if len(m.jumps) > maxJumps {
		m.jumps = m.jumps[len(m.jumps)-maxJumps:]
	}
	m.back = len(m.jumps)
	m.SetCursor(i)
}

// jumped notes a move from frame from that Home or End made as a jump.
func (m *timelineView) jumped(from int) {
	if to := m.cursor; to != from {
		m.cursor = from
		m.jump(to)
	}
}

// jumpBack goes back along the jump list (dir -1, [ or ctrl+o) or forward
// again (dir 1, ]); false when there is nowhere to go.
func (m *timelineView) jumpBack(dir int) bool {
	if dir < 0 {
		if m.back == 0 {
			return false
		}
		if m.back == len(m.jumps) { // leaving the present: keep it to come forward to
			m.jumps = append(m.jumps, m.cursor)
		}
		m.back--
	} else {
		if m.back >= len(m.jumps)-1 {
			return false
		}
		m.back++
	}
	m.SetCursor(m.jumps[m.back])
	if m.back == len(m.jumps)-1 { // back at the present
		m.jumps = m.jumps[:m.back] // m.back == len(m.jumps): the present
	}
	return true
}

// SetCursor moves the needle to frame i (clamped) and scrolls to it.
func (m *timelineView) SetCursor(i int) {
	m.cursor = max(0, min(i, m.tl.Len()-1))
	m.follow = m.cursor == m.tl.Len()-1
	m.scroll()
}

// scroll keeps the needle's row on screen with a little context around it.
func (m *timelineView) scroll() {
	rows := m.rows()
	margin := min(2, rows/4)
	at := m.rowOf(m.cursor)
	if at < m.offset+margin {
		m.offset = at - margin
	}
	if at >= m.offset+rows-margin {
		m.offset = at - rows + margin + 1
	}
	m.offset = max(0, min(m.offset, m.n()-rows))
}

// update moves the needle; a key that looks for a frame (n, t, e, m, ')
// may answer with a message that it found none.
func (m *timelineView) update(km tea.KeyMsg) tea.Cmd {
	k := m.keys
	switch {
	case key.Matches(km, k.Prev, k.Up):
		m.step(-1)
	case key.Matches(km, k.Next, k.Down):
		m.step(1)
	case key.Matches(km, k.PrevStep):
		m.SetCursor(m.stepBack())
	case key.Matches(km, k.NextStep):
		m.SetCursor(m.tl.StepStart(m.tl.StepOf(m.cursor) + 1))
	case key.Matches(km, k.PageUp):
		m.step(-m.rows())
	case key.Matches(km, k.PageDown):
		m.step(m.rows())
	case key.Matches(km, k.Home):
		from := m.cursor
		m.toRow(0)
		m.jumped(from)
	case key.Matches(km, k.End):
		from := m.cursor
		if m.entries == nil {
			m.SetCursor(m.tl.Len() - 1)
		} else {
			m.toRow(m.n() - 1)
		}
		m.jumped(from)
	case key.Matches(km, k.JumpBack):
		if !m.jumpBack(-1) {
			return m.said("no jump to go back to ([ and ctrl+o go back after n, t, e, ', g, /, home or end)")
		}
	case key.Matches(km, k.JumpFwd):
		if !m.jumpBack(1) {
			return m.said("no jump ahead (] goes forward again after [)")
		}
	case key.Matches(km, k.Fold):
		return m.toggleRun()
	case key.Matches(km, k.FoldAll):
		m.view.Fold, m.view.Open = !m.view.Fold, nil
		m.project()
		return m.said(map[bool]string{true: "output folded: z opens a run", false: "output unfolded"}[m.view.Fold])
	case key.Matches(km, k.Filter):
		return m.setFilter(nextFilter(m.view.Only))
	case key.Matches(km, k.Steps):
		m.view.Steps = !m.view.Steps
		m.project()
	default:
		return m.find(km)
	}
	return nil
}

// stepBack goes to the start of this step, or of the one before when the
// needle is already there.
func (m *timelineView) stepBack() int {
	s := m.tl.StepOf(m.cursor)
	if start := m.tl.StepStart(s); start < m.cursor {
		return start
	}
	return m.tl.StepStart(s - 1)
}

// notFoundMsg tells the deck a jump found nothing.
type notFoundMsg struct{ what string }

func (m *timelineView) find(km tea.KeyMsg) tea.Cmd {
	k := m.keys
	jumps := []struct {
		b    key.Binding
		f    timeline.Find
		dir  int
		what string
	}{
		{k.NextLLM, timeline.FindLLM, 1, "no later LLM call"}, {k.PrevLLM, timeline.FindLLM, -1, "no earlier LLM call"},
		{k.NextTool, timeline.FindTool, 1, "no later tool call"}, {k.PrevTool, timeline.FindTool, -1, "no earlier tool call"},
		{k.NextError, timeline.FindError, 1, "no later error"}, {k.PrevError, timeline.FindError, -1, "no earlier error"},
	}
	for _, j := range jumps {
		if key.Matches(km, j.b) {
			if i, ok := m.tl.Next(m.cursor, j.f, j.dir); ok {
				m.jump(i)
				return nil
			}
			return func() tea.Msg { return notFoundMsg{j.what} }
		}
	}
	switch {
	case key.Matches(km, k.Mark):
		m.markers[m.cursor] = !m.markers[m.cursor]
		if !m.markers[m.cursor] {
			delete(m.markers, m.cursor)
		}
		return m.saveMarkers()
	case key.Matches(km, k.NextMark):
		m.jump(m.nextMarker())
	}
	return nil
}

// loadMarkers brings back the markers kept beside the tape, and from then
// on keeps them there (Options.KeepMarkers).
func (m *timelineView) loadMarkers() {
	m.keepMarkers = true
	saved, err := m.tl.Markers()
	if err != nil {
		m.markersErr = err
		return
	}
	for _, mk := range saved {
		if mk.Frame >= 0 && mk.Frame < m.tl.Len() {
			m.markers[mk.Frame] = true
			if mk.Note != "" {
				if m.notes == nil {
					m.notes = map[int]string{}
				}
				m.notes[mk.Frame] = mk.Note
			}
		}
	}
}

// setNote puts a note on the marker of the frame under the needle (a
// marker is set there if there is none; an empty note clears the note),
// kept as markers are.
func (m *timelineView) setNote(note string) tea.Cmd {
	if note == "" && !m.markers[m.cursor] {
		// Nothing to clear: an empty note made an empty marker.
		return func() tea.Msg { return notFoundMsg{"no note on this frame to clear (:note TEXT sets one)"} }
	}
	m.markers[m.cursor] = true
	if m.notes == nil {
		m.notes = map[int]string{}
	}
	if note == "" {
		delete(m.notes, m.cursor)
	} else {
		m.notes[m.cursor] = note
	}
	return m.saveMarkers()
}

// saveMarkers keeps the markers beside the tape; when that fails (a tape
// in a read-only place, or in a store), they stay for the session and the
// deck says so.
func (m *timelineView) saveMarkers() tea.Cmd {
	if !m.keepMarkers {
		return nil
	}
	list := make([]timeline.Marker, 0, len(m.markers))
	for i := range m.markers {
		list = append(list, timeline.Marker{Frame: i, Note: m.notes[i]})
	}
	if err := timeline.SaveMarkers(m.tl.Path(), list); err != nil {
		return func() tea.Msg {
			return notFoundMsg{fmt.Sprintf("markers kept for this session only: %v", err)}
		}
	}
	return nil
}

func (m *timelineView) nextMarker() int {
	best, first := -1, -1
	for i := range m.markers {
		if i > m.cursor && (best < 0 || i < best) {
			best = i
		}
		if first < 0 || i < first {
			first = i
		}
	}
	if best < 0 {
		return first
	}
	return best
}

// said is a word for the status line.
func (m *timelineView) said(s string) tea.Cmd {
	return func() tea.Msg { return notFoundMsg{s} }
}

// setFilter shows only the frames of class c (0: every kind).
func (m *timelineView) setFilter(c timeline.Class) tea.Cmd {
	switch {
	case c != 0 && m.filterHome < 0:
		m.filterHome, m.filterMoved = m.cursor, m.cursor
	case c == 0 && m.filterHome >= 0:
		if m.cursor == m.filterMoved {
			m.cursor = m.filterHome
			defer m.scroll()
		}
		m.filterHome, m.filterMoved = -1, -1
	}
	m.view.Only = c
	what := "every kind of frame"
	if m.view.Only != 0 {
		what = "only " + m.view.Only.String() + " (and step rules, run start and end): F for the next kind"
	}
	if m.slowView() {
		return m.projectLater(what)
	}
	m.project()
	return m.said(what)
}

// nextFilter is the filter after f: every kind, then each class alone.
func nextFilter(f timeline.Class) timeline.Class {
	if f == 0 {
		return timeline.Classes[0]
	}
	for i, c := range timeline.Classes {
		if c == f && i+1 < len(timeline.Classes) {
			return timeline.Classes[i+1]
		}
	}
	return 0
}

// toggleRun opens the folded run under the needle, or folds again the
// opened run the needle is in.
func (m *timelineView) toggleRun() tea.Cmd {
	if !m.view.Fold || m.view.Steps {
		return m.said("nothing folded here (Z folds output)")
	}
	if e := m.entry(m.rowOf(m.cursor)); e.Folded() {
		if m.view.Open == nil {
			m.view.Open = map[int]bool{}
		}
		m.view.Open[e.First] = true
		m.project()
		return nil
	}
	// An opened run holds the needle when folding it again would.
	for first := range m.view.Open {
		if first > m.cursor {
			continue
		}
		o := m.view
		o.Open = maps.Clone(m.view.Open)
		delete(o.Open, first)
		entries, err := m.tl.View(context.Background(), o)
		if err != nil {
			continue
		}
		if e := entries[timeline.EntryOf(entries, m.cursor)]; e.First == first && e.Last >= m.cursor {
			m.view.Open = o.Open
			m.project()
			m.SetCursor(first)
			return nil
		}
	}
	return m.said("not a run of output (z opens or folds one)")
}

// rowAt returns the frame under line y of the pane (0 is the title), or -1.
func (m *timelineView) rowAt(y int) int {
	r := m.offset + y - 1
	if y < 1 || r >= m.n() {
		return -1
	}
	return m.entry(r).First
}

// onScreen is the frames the rows on screen read, as spans of frames: a
// step's row reads the whole step, a folded run of output its first.
func (m *timelineView) onScreen() [][2]int {
	last := min(m.offset+m.h, m.n()) - 1
	if m.entries == nil {
		return [][2]int{{m.offset, last}}
	}
	var spans [][2]int
	for r := m.offset; r <= last; r++ {
		e := m.entries[r]
		if m.view.Steps {
			spans = append(spans, [2]int{e.First, e.Last})
		} else {
			spans = append(spans, [2]int{e.First, e.First})
		}
	}
	return spans
}

// View draws the title and the rows on screen.
func (m *timelineView) View() string {
	lines := []string{m.title()}
	for r := m.offset; r < m.n() && len(lines) < m.h; r++ {
		lines = append(lines, m.rowView(r))
	}
	if m.tl.Len() == 0 {
		lines = append(lines, m.st.Muted.Render("  (no frames)"))
	}
	return box(lines, m.w, m.h)
}

func (m *timelineView) title() string {
	st := m.st.Title
	if m.focused {
		st = m.st.TitleFocused
	}
	t := "timeline"
	if m.label != "" {
		t = m.label
	}
	t = fmt.Sprintf("%s · %s · frame %d of %d", t, baseName(m.tl.Path()), m.cursor, m.tl.Len())
	switch {
	case m.viewErr != nil:
		t += " · view: " + m.viewErr.Error()
	case m.view.Steps:
		t += fmt.Sprintf(" · %s", counted(int64(m.n()), "step", "steps"))
	case m.view.Only != 0:
		t += fmt.Sprintf(" · only %s · %d rows", m.view.Only, m.n())
	}
	return st.Render(fit(t, m.w))
}

// rowView draws row r: a step's summary, a folded run of output, or a
// frame.
func (m *timelineView) rowView(r int) string {
	e := m.entry(r)
	sel := r == m.rowOf(m.cursor)
	switch {
	case m.view.Steps:
		return m.stepRow(e, sel)
	case e.Folded():
		return m.foldRow(e, sel)
	}
	return m.row(e.First, sel)
}

// foldRow draws a run of output frames as one row: how many, on which
// streams, and the start of the first.
func (m *timelineView) foldRow(e timeline.Entry, sel bool) string {
	first := m.tl.Peek(e.First)
	p := m.painter(sel)
	cur := " "
	if sel {
		cur = "▶"
	}
	num := p(m.st.Muted, fmt.Sprintf("%*d", len(fmt.Sprint(max(m.tl.Len()-1, 0))), e.First))
	left := cur + " " + " " + num
	if m.w >= 50 {
		left += " " + p(m.st.Muted, timeline.Clock(first.Time)+" "+fmt.Sprintf("s%-2d", first.Stream))
	}
	kind := m.st.Kind(timeline.KindOutput)
	text := fmt.Sprintf("▸ %d outputs (frames %d-%d, z opens): %s", e.Last-e.First+1, e.First, e.Last, timeline.OneLine(first.Summary, 0))
	line := fit(left+" "+p(kind, Glyph(timeline.KindOutput))+" "+p(kind, termtext.Sanitize(text)), m.w)
	if sel {
		return m.st.Selected.Render(line)
	}
	return line
}

// stepRow draws one step's summary: calls, tool calls, tokens, cost,
// latency and files touched.
func (m *timelineView) stepRow(e timeline.Entry, sel bool) string {
	s, ok := m.sums[e.First]
	if !ok && !m.ready(e) {
		return m.pendingRow(e.First, sel) // a store's frames on their way
	}
	if !ok {
		if m.sums == nil {
			m.sums = map[int]timeline.StepSummary{}
		}
		s = m.tl.SummarizeStep(e)
		m.sums[e.First] = s
	}
	p := m.painter(sel)
	cur := " "
	if sel {
		cur = "▶"
	}
	mark := " "
	if s.Errors {
		mark = p(m.st.Error, "!")
	}
	approx := timeline.Approx(s.Estimated)
	cost := approx + timeline.USD(s.Cost)
	if s.Unpriced > 0 {
		cost += "+?"
	}
	text := fmt.Sprintf("step %d · %s · %s · %s tok · %s · %s · %s", s.Step+1, counted(int64(s.Calls), "call", "calls"),
		counted(int64(s.Tools), "tool call", "tool calls"), approx+count(s.Tokens), cost, timeline.Clock(s.Latency),
		counted(int64(s.Files), "file", "files"))
	num := p(m.st.Muted, fmt.Sprintf("%*d", len(fmt.Sprint(max(m.tl.Len()-1, 0))), e.First))
	line := fit(cur+mark+" "+num+" "+p(m.st.Rule, text), m.w)
	if sel {
		return m.st.Selected.Render(line)
	}
	return line
}

// ready reports whether every frame of entry e reads without a request.
func (m *timelineView) ready(e timeline.Entry) bool {
	for i := e.First; i <= e.Last; i++ {
		if !m.tl.Ready(i) {
			return false
		}
	}
	return true
}

// pendingRow draws entry first's row while its frames are on their way
// from a store.
func (m *timelineView) pendingRow(first int, sel bool) string {
	num := fmt.Sprintf("%*d", len(fmt.Sprint(max(m.tl.Len()-1, 0))), first)
	cur := " "
	if sel {
		cur = "▶"
	}
	line := fit(cur+"  "+num+" …", m.w)
	if sel {
		return m.st.Selected.Render(line)
	}
	return m.st.Muted.Render(line)
}

// painter renders with a style, except on the needle's row, which is
// drawn plain and highlighted as a whole.
func (m *timelineView) painter(sel bool) painter {
	return func(s lipgloss.Style, t string) string {
		if sel {
			return t
		}
		return s.Render(t)
	}
}

// row draws frame i: gutter, number, time, stream, glyph, summary, tokens,
// cost. The needle's row is drawn plain and then highlighted as a whole, so
// the highlight is not cut by the colours inside it.
func (m *timelineView) row(i int, sel bool) string {
	r := m.tl.Peek(i)
	p := func(s lipgloss.Style, t string) string {
		if sel {
			return t
		}
		return s.Render(t)
	}
	cur := " "
	if sel {
		cur = "▶"
	}
	gutter := cur + m.mark(i, r, p) + " "
	num := p(m.st.Muted, fmt.Sprintf("%*d", len(fmt.Sprint(max(m.tl.Len()-1, 0))), i))
	var line string
	if r.Kind == timeline.KindStep {
		rule := fmt.Sprintf("── end of step %d · %s ", r.Step+1, timeline.Clock(r.Time))
		line = gutter + num + " " + p(m.st.Rule, rule)
		line += p(m.st.Rule, strings.Repeat("─", max(m.w-visibleWidth(line), 0))) // fill, not cut text: no "…"
	} else {
		line = m.frameRow(r, gutter+num, p)
	}
	line = fit(line, m.w)
	if sel {
		return m.st.Selected.Render(line)
	}
	return line
}

type painter func(lipgloss.Style, string) string

func (m *timelineView) frameRow(r timeline.Row, left string, p painter) string {
	if m.w >= 50 {
		left += " " + p(m.st.Muted, timeline.Clock(r.Time)+" "+fmt.Sprintf("s%-2d", r.Stream))
	}
	kind := m.st.Kind(r.Kind)
	if r.Error {
		kind = m.st.Error
	}
	if r.Fork {
		kind = m.st.Fork
	}
	left += " " + p(kind, Glyph(r.Kind)) + " "
	right := p(m.st.Muted, m.numbers(r))
	room := m.w - visibleWidth(left) - visibleWidth(right) - 1
	return left + p(kind, fit(termtext.Sanitize(timeline.OneLine(r.SummaryIn(room), 0)), max(room, 0))) + " " + right
}

// numbers is a row's tokens and cost column, as wide as the pane allows.
func (m *timelineView) numbers(r timeline.Row) string {
	if m.w < 60 {
		return ""
	}
	tok, cost := "", ""
	approx := ""
	if r.Estimated {
		approx = "~"
	}
	if r.Tokens > 0 {
		tok = approx + count(r.Tokens)
	}
	if r.Kind == timeline.KindLLMResponse && r.Tokens > 0 { // no usage, no cost to show: not $0
		cost = approx + timeline.USD(r.Cost)
		if !r.Priced && r.Tokens > 0 {
			cost = "+?"
		}
	}
	if m.w < 72 {
		return fmt.Sprintf("%8s", cost)
	}
	return fmt.Sprintf("%7s %8s", tok, cost)
}

// mark is the second gutter cell: marker, fork point, divergence, trip,
// error, a trip's evidence (↻).
func (m *timelineView) mark(i int, r timeline.Row, p painter) string {
	switch {
	case m.markers[i]:
		return p(m.st.Marker, "◆")
	case i == m.forkAt || r.Fork:
		return p(m.st.Fork, "⑂")
	case i == m.diverge:
		return p(m.st.Warn, "≠")
	case r.Trip:
		return p(m.st.Error, "‼")
	case r.Error:
		return p(m.st.Error, "!")
	case r.Evidence:
		return p(m.st.Warn, "↻")
	}
	return " "
}

// baseName is a tape's file name; for a store's tape URL, the name in
// its path (its query, which holds URLs of its own, left out).
func baseName(p string) string {
	if timeline.IsRemote(p) {
		p, _, _ = strings.Cut(p, "?")
	}
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// timelineKeys move the needle over a timeline.
type timelineKeys struct {
	Prev, Next, PrevStep, NextStep, Up, Down, PageUp, PageDown, Home, End, Goto key.Binding
	NextLLM, PrevLLM, NextTool, PrevTool, NextError, PrevError                  key.Binding
	Search, SearchNext, SearchPrev, Mark, NextMark, Play, Speed                 key.Binding
	Read, Scale, Note, Idle                                                     key.Binding
	Fold, FoldAll, Filter, Steps                                                key.Binding
	Pager, Editor, Copy, Write                                                  key.Binding
	JumpBack, JumpFwd, Curl, Command, Markers, Table, Grep                      key.Binding
}

func newTimelineKeys() timelineKeys {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return timelineKeys{
		Prev:       b([]string{"left", "h"}, "←/h", "frame back"),
		Next:       b([]string{"right", "l"}, "→/l", "frame on"),
		PrevStep:   b([]string{"shift+left", "H"}, "⇧←/H", "step back"),
		NextStep:   b([]string{"shift+right", "L"}, "⇧→/L", "step on"),
		Up:         b([]string{"up", "k"}, "↑/k", "up"),
		Down:       b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:     b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PageDown:   b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Home:       b([]string{"home"}, "home", "first frame"),
		End:        b([]string{"end", "G"}, "end/G", "last frame"),
		Goto:       b([]string{"g"}, "g", "go to frame"),
		Read:       b([]string{"enter"}, "enter", "read the frame"),
		Scale:      b([]string{"s"}, "s", "scrubber by time/frame/step"),
		Note:       b([]string{"M"}, "M", "note on this frame's marker"),
		NextLLM:    b([]string{"n"}, "n/N", "next/prev LLM call"),
		PrevLLM:    b([]string{"N"}, "N", "prev LLM call"),
		NextTool:   b([]string{"t"}, "t/T", "next/prev tool call"),
		PrevTool:   b([]string{"T"}, "T", "prev tool call"),
		NextError:  b([]string{"e"}, "e/E", "next/prev error"),
		PrevError:  b([]string{"E"}, "E", "prev error"),
		Search:     b([]string{"/"}, "/", "search"),
		SearchNext: b([]string{";"}, ";/,", "next/prev match"),
		SearchPrev: b([]string{","}, ",", "prev match"),
		Mark:       b([]string{"m"}, "m", "marker"),
		NextMark:   b([]string{"'"}, "'", "next marker"),
		Play:       b([]string{" "}, "space", "play"),
		Speed:      b([]string{"x"}, "x", "speed 1x/2x/8x"),
		Idle:       b([]string{"i"}, "i", "skip idle time or not"),
		Fold:       b([]string{"z"}, "z", "open/fold a run of output"),
		FoldAll:    b([]string{"Z"}, "Z", "fold output or not"),
		Filter:     b([]string{"F"}, "F", "only LLM/tools/files/output/errors/tx"),
		Steps:      b([]string{"S"}, "S", "one row per step"),
		Pager:      b([]string{"o"}, "o", "frame to $PAGER"),
		Editor:     b([]string{"v"}, "v", "frame in $EDITOR (a copy)"),
		Copy:       b([]string{"y"}, "y", "copy the frame (OSC 52)"),
		Write:      b([]string{"w"}, "w", "write the frame to a file"),
		JumpBack:   b([]string{"[", "ctrl+o"}, "[/]", "back/forward along the jumps"),
		JumpFwd:    b([]string{"]"}, "]", "forward along the jumps"),
		Curl:       b([]string{"c"}, "c", "copy the call as a curl command"),
		Command:    b([]string{":"}, ":", "command line"),
		Markers:    b([]string{"\""}, "\"", "marker list"),
		Table:      b([]string{"$"}, "$", "step table: tokens, cost, time"),
		Grep:       b([]string{"|"}, "|", "only rows holding text, as you type"),
	}
}
