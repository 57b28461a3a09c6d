package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	case promptOverwrite:
		last = ""
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
		if answer != d.lastQuery {
			d.found = nil
		}
		d.lastQuery = answer
		return d.search(answer, 1)
	case promptNote:
		return d.tracks[d.focus].setNote(answer)
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

// searchDone puts the needle on what a search found, or says it found
// nothing; the first search for a query then counts every match, in the
// background.
func (d *Deck) searchDone(msg searchDoneMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		return nil // cancelled by a newer search
	case msg.found < 0:
		d.status = fmt.Sprintf("no frame holds %q", msg.query) + unreadableNote(msg.res)
		return nil
	}
	msg.track.SetCursor(msg.found)
	d.frame.Mark(timeline.ParseQuery(msg.query).Text)
	d.status = d.foundText(msg.query, msg.found) + unreadableNote(msg.res)
	if d.found != nil && d.found.query == msg.query && d.found.track == msg.track {
		return nil
	}
	return d.countMatches(msg.track, msg.query)
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

// matchesMsg carries the count of a query's matches back.
type matchesMsg struct{ list *matchList }

// countMatches lists every frame query matches, in a command that a newer
// search cancels.
func (d *Deck) countMatches(tv *timelineView, query string) tea.Cmd {
	ctx, cancel := context.WithCancel(d.ctx)
	d.searching = cancel
	return func() tea.Msg {
		frames, total, err := tv.tl.Matches(ctx, query, maxMatches)
		if err != nil {
			return nil
		}
		return matchesMsg{&matchList{track: tv, query: query, frames: frames, total: total}}
	}
}

func (d *Deck) matchesCounted(msg matchesMsg) {
	if msg.list.query != d.lastQuery {
		return // a newer search
	}
	d.found = msg.list
	if tv := d.tracks[d.focus]; tv == msg.list.track && msg.list.at(tv.cursor) >= 0 {
		d.status = d.foundText(msg.list.query, tv.cursor)
	}
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
	tv.SetCursor(l.frames[j])
	d.frame.Mark(timeline.ParseQuery(l.query).Text)
	d.status = d.foundText(l.query, l.frames[j])
	return nil
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
