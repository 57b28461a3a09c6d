package tui

import (
	"context"
	"fmt"
	"strconv"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jukebox-os/jukebox/timeline"
)

// openPrompt asks a question on the status line, with the last answer
// to it selected.
func (d *Deck) openPrompt(k promptKind) {
	last := d.lastGoto
	switch k {
	case promptSearch:
		last = d.lastQuery
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
		d.lastQuery = answer
		return d.search(answer, 1)
	case promptNote:
		return d.tracks[d.focus].setNote(answer)
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
// nothing.
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
