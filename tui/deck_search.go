package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// openPrompt asks a question on the status line, with the last answer
// to it selected.
func (d *Deck) openPrompt(k promptKind) {
	last := d.lastGoto
	switch k {
	case promptSearch:
		last = d.lastQuery
	case promptWrite:
		last = d.writeName()
	case promptOverwrite, promptCommand:
		last = ""
	case promptFilter:
		last = d.filterText
	case promptNote: // the note there is, to edit
		tv := d.tracks[d.focus]
		last = tv.notes[tv.cursor]
	}
	d.prompt.ask(k, last)
	d.pane = panePrompt
}

// promptKey gives a key to the prompt and carries out its answer: a
// search, or a frame to go to.
func (d *Deck) promptKey(msg tea.KeyMsg) tea.Cmd {
	v := d.prompt.update(msg)
	if d.prompt.kind == promptFilter {
		return d.filterKey(v)
	}
	if v == stay {
		return nil
	}
	d.pane = paneTracks
	if v == dismissed {
		return nil
	}
	answer := d.prompt.answer()
	switch d.prompt.kind {
	case promptSearch:
		if q := timeline.ParseQuery(answer); len(q.Bad) > 0 {
			d.status = fmt.Sprintf("%s: kind: takes llm, tools, files, output, errors, tx or a frame kind (llm.request, ...); status: a number", strings.Join(q.Bad, ", "))
			return nil
		}
		if l := d.found; answer == d.lastQuery && l != nil && l.track == d.tracks[d.focus] && len(l.frames) == l.total {
			return d.nextMatch(1) // counted already
		}
		d.lastQuery = answer
		return d.startSweep(answer)
	case promptNote:
		return d.tracks[d.focus].setNote(answer)
	case promptCommand:
		return d.runCommand(answer)
	case promptWrite:
		d.writeFrame(answer, false)
		return nil
	case promptOverwrite:
		if strings.EqualFold(answer, "y") || strings.EqualFold(answer, "yes") {
			d.writeFrame(d.prompt.about, true)
		} else {
			d.status = termtext.Quote(d.prompt.about) + " kept as it was"
		}
		return nil
	}
	d.lastGoto = answer
	d.gotoFrame(answer)
	return nil
}

// gotoFrame puts the needle on the frame numbered answer, or says why not.
func (d *Deck) gotoFrame(answer string) {
	tv := d.tracks[d.focus]
	n, err := strconv.Atoi(answer)
	if err != nil || n < 0 || n >= tv.tl.Len() {
		d.status = fmt.Sprintf("no frame %q: frames are 0 to %d", answer, tv.tl.Len()-1)
		return
	}
	tv.jump(n)
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
// It is how ; and , search on while the sweep has not counted every match.
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
	tl := tv.tl
	release := tl.Hold() // read in the background: see Timeline.Hold
	return func() tea.Msg {
		defer release()
		r, err := tl.SearchReport(ctx, query, from, dir)
		return searchDoneMsg{track: tv, query: query, found: r.Frame, err: err, res: r}
	}
}

// searchDone puts the needle on what a search found, or says it found
// nothing.
func (d *Deck) searchDone(msg searchDoneMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		return nil // cancelled by a newer search
	case msg.found < 0:
		d.status = fmt.Sprintf("no frame holds %q", msg.query) + unreadableNote(msg.res.Unreadable, msg.res.First)
		return nil
	}
	msg.track.jump(msg.found)
	d.frame.Mark(timeline.ParseQuery(msg.query).Text)
	d.status = d.foundText(msg.query, msg.found) + unreadableNote(msg.res.Unreadable, msg.res.First)
	return nil
}

// sweep is a search reading the whole tape in the background
// (timeline.SweepSearch): the needle goes to its first match as soon as
// it is found, and the status line counts the matches as they come.
type sweep struct {
	track  *timelineView
	query  string
	cancel context.CancelFunc
	moved  bool // the needle went to the first match
	notify chan struct{}
	mu     sync.Mutex
	latest timeline.Sweep
	err    error
	ended  bool
	filter bool // the rows shown are its matches (|)
}

// sweepMsg says a sweep found more, or ended.
type sweepMsg struct{ s *sweep }

// startSweep searches for query from the needle, reading every frame
// once: the first match, "no match" and the count all come from it. A new
// search cancels the last.
func (d *Deck) startSweep(query string) tea.Cmd { return d.sweepFor(query, false) }

// sweepFor is startSweep; a filter's sweep keeps the matching rows on
// screen as they are found instead of moving the needle.
func (d *Deck) sweepFor(query string, filter bool) tea.Cmd {
	d.stopSweep()
	tv := d.tracks[d.focus]
	ctx, cancel := context.WithCancel(d.ctx)
	s := &sweep{track: tv, query: query, cancel: cancel, notify: make(chan struct{}, 1), filter: filter}
	d.sweeping, d.found = s, nil
	d.status = ""
	from := tv.cursor
	if filter {
		from = -1 // every frame, in order
	}
	go func() {
		err := tv.tl.SweepSearch(ctx, query, from, maxMatches, func(r timeline.Sweep) {
			s.mu.Lock()
			s.latest = r
			s.mu.Unlock()
			s.poke()
		})
		s.mu.Lock()
		s.err, s.ended = err, true
		s.mu.Unlock()
		s.poke()
	}()
	return s.wait(ctx)
}

// poke wakes the command waiting on the sweep, without ever blocking.
func (s *sweep) poke() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// wait is a command that answers when the sweep found more, or ended.
func (s *sweep) wait(ctx context.Context) tea.Cmd {
	return func() tea.Msg {
		select {
		case <-s.notify:
			return sweepMsg{s}
		case <-ctx.Done():
			return nil
		}
	}
}

// state is what the sweep found so far, and whether it has ended.
func (s *sweep) state() (timeline.Sweep, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest, s.ended, s.err
}

// stopSweep cancels a running sweep.
func (d *Deck) stopSweep() {
	if d.sweeping != nil {
		d.sweeping.cancel()
		d.sweeping = nil
	}
}

// swept takes what a sweep found so far: the needle goes to its first
// match, once; at its end, every match is counted for ; and ,.
func (d *Deck) swept(msg sweepMsg) tea.Cmd {
	s := msg.s
	if s != d.sweeping {
		return nil // cancelled by a newer search
	}
	r, ended, err := s.state()
	if err != nil {
		d.sweeping = nil
		return nil
	}
	if s.filter {
		return d.filtered(s, r, ended)
	}
	if hit := r.FirstHit(); hit >= 0 && !s.moved {
		s.moved = true
		s.track.jump(hit)
		d.frame.Mark(timeline.ParseQuery(s.query).Text)
		d.status = d.foundText(s.query, hit) + unreadableNote(r.Unreadable, r.First)
	}
	if !ended || !r.Done() {
		return s.wait(d.ctx)
	}
	d.sweeping = nil
	if !s.moved {
		d.status = fmt.Sprintf("no frame holds %q", s.query) + unreadableNote(r.Unreadable, r.First)
		return nil
	}
	d.found = &matchList{track: s.track, query: s.query, frames: append(r.Before, r.After...), total: r.Total}
	if tv := d.tracks[d.focus]; tv == s.track && d.found.at(tv.cursor) >= 0 {
		d.status = d.foundText(s.query, tv.cursor) + unreadableNote(r.Unreadable, r.First)
	}
	return nil
}

// sweepText is the search's progress for the status line: the matches
// counted so far and how much of the tape is read. It stays while keys
// are pressed, until the sweep ends.
func (d *Deck) sweepText() string {
	s := d.sweeping
	if s == nil {
		return ""
	}
	r, _, _ := s.state()
	pct := 0
	if r.Len > 0 {
		pct = r.Scanned * 100 / r.Len
	}
	return fmt.Sprintf("/%q: %s so far · %d%%", s.query, counted(int64(r.Total), "match", "matches"), pct)
}

// maxMatches bounds the list of matches kept for ; and , (the count goes
// on past it).
const maxMatches = 100_000

// matchList is every frame a query matches on one track.
type matchList struct {
	track  *timelineView
	query  string
	frames []int
	total  int
}

// at is the place of frame i in the list (0-based), or -1.
func (l *matchList) at(i int) int {
	if j, ok := slices.BinarySearch(l.frames, i); ok {
		return j
	}
	return -1
}

// foundText says where a match is, and its place among all of them once
// they are counted.
func (d *Deck) foundText(query string, frame int) string {
	place := ""
	if l := d.found; l != nil && l.query == query {
		if j := l.at(frame); j >= 0 {
			place = fmt.Sprintf(" · match %d/%d", j+1, l.total)
		}
	}
	return fmt.Sprintf("%q found in frame %d%s · ; next · , previous", query, frame, place)
}

// nextMatch goes to the next (dir > 0) or previous match of the last
// search: from the counted list when there is one, else by searching on.
func (d *Deck) nextMatch(dir int) tea.Cmd {
	tv := d.tracks[d.focus]
	l := d.found
	if l == nil || l.track != tv || l.query != d.lastQuery || len(l.frames) < l.total || len(l.frames) == 0 {
		return d.search(d.lastQuery, dir)
	}
	j, ok := slices.BinarySearch(l.frames, tv.cursor)
	switch {
	case dir > 0 && ok:
		j++
	case dir < 0:
		j--
	}
	j = (j%len(l.frames) + len(l.frames)) % len(l.frames)
	tv.jump(l.frames[j])
	d.frame.Mark(timeline.ParseQuery(l.query).Text)
	d.status = d.foundText(l.query, l.frames[j])
	return nil
}

// unreadableNote says which frames a search could not read in full, so
// that "not found" never hides damage.
func unreadableNote(unreadable int, first *timeline.FrameError) string {
	switch {
	case first == nil:
		return ""
	case unreadable > 1:
		return fmt.Sprintf(" · %s unreadable, first %s", counted(int64(unreadable), "frame", "frames"), timeline.OneLine(first.Error(), 0))
	}
	return " · " + timeline.OneLine(first.Error(), 0)
}

// filterTickMsg starts the filter's search once typing paused.
type filterTickMsg struct{ gen int }

// filterPause is how long typing must pause before the rows are filtered.
const filterPause = 150 * time.Millisecond

// filterKey follows the filter prompt: each edit filters the rows again
// once typing pauses, enter keeps the filter, esc drops it.
func (d *Deck) filterKey(v verdict) tea.Cmd {
	switch v {
	case dismissed:
		d.pane = paneTracks
		d.setFilterText("")
		return nil
	case done:
		d.pane = paneTracks
		if d.filterText != d.prompt.answer() {
			return d.setFilterText(d.prompt.answer())
		}
		return nil
	}
	d.filterGen++
	gen := d.filterGen
	return tea.Tick(filterPause, func(time.Time) tea.Msg { return filterTickMsg{gen} })
}

// filterTick filters by what the prompt holds, when nothing was typed
// since the tick was asked for.
func (d *Deck) filterTick(msg filterTickMsg) tea.Cmd {
	if msg.gen != d.filterGen || d.pane != panePrompt || d.prompt.kind != promptFilter {
		return nil
	}
	return d.setFilterText(d.prompt.answer())
}

// setFilterText shows only the rows that hold text ("" shows every row
// again).
func (d *Deck) setFilterText(text string) tea.Cmd {
	if text == d.filterText && (text == "" || d.sweeping != nil && d.sweeping.filter) {
		return nil
	}
	d.filterText = text
	tv := d.tracks[d.focus]
	if text == "" {
		if d.sweeping != nil && d.sweeping.filter {
			d.stopSweep()
		}
		tv.view.Keep = nil
		tv.project()
		d.status = "every row again"
		return nil
	}
	if q := timeline.ParseQuery(text); len(q.Bad) > 0 {
		d.status = fmt.Sprintf("%s: kind: takes llm, tools, files, output, errors, tx or a frame kind; status: a number", strings.Join(q.Bad, ", "))
		return nil
	}
	tv.view.Keep = map[int]bool{}
	tv.project()
	return d.sweepFor(text, true)
}

// filtered shows a filter's matches so far.
func (d *Deck) filtered(s *sweep, r timeline.Sweep, ended bool) tea.Cmd {
	keep := make(map[int]bool, len(r.Before)+len(r.After))
	for _, i := range r.Before {
		keep[i] = true
	}
	for _, i := range r.After {
		keep[i] = true
	}
	s.track.view.Keep = keep
	s.track.project()
	pct := 100
	if r.Len > 0 && !r.Done() {
		pct = r.Scanned * 100 / r.Len
	}
	d.status = fmt.Sprintf("only rows holding %q: %s", s.query, counted(int64(r.Total), "frame", "frames"))
	if !ended || !r.Done() {
		d.status += fmt.Sprintf(" so far · %d%%", pct)
		return s.wait(d.ctx)
	}
	d.sweeping = nil
	d.status += " · | changes it, | then esc shows every row"
	return nil
}
