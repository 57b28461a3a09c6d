package tui

import (
	"fmt"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// Fixed rows of the deck: header, scrubber (two), status, help.
const (
	headerRows = 1
	scrubRows  = 2
	chromeRows = headerRows + scrubRows + 2
	wideCols   = 120 // from this width the frame view sits beside the timelines
)

// rect is a pane's place on screen.
type rect struct{ x, y, w, h int }

func (r rect) has(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// places computes where each pane goes: the frame view beside the
// timelines on wide terminals, under them on narrow ones.
func (d *Deck) places() (tracks []rect, frame rect) {
	bodyY := headerRows + scrubRows
	bodyH := max(d.h-chromeRows, 2*len(d.tracks)+2)
	n := max(len(d.tracks), 1)
	if d.zoom { // the frame view alone: the timelines are not on screen
		return make([]rect, n), rect{0, bodyY, d.w, max(d.h-chromeRows, 1)}
	}
	if d.w >= wideCols {
		lw := d.w * 11 / 20
		for i := range n {
			tracks = append(tracks, rect{0, bodyY + i*bodyH/n, lw, (i+1)*bodyH/n - i*bodyH/n})
		}
		return tracks, rect{lw + 1, bodyY, d.w - lw - 1, bodyH}
	}
	th := max(bodyH/2, 2*n)
	for i := range n {
		tracks = append(tracks, rect{0, bodyY + i*th/n, d.w, (i+1)*th/n - i*th/n})
	}
	return tracks, rect{0, bodyY + th, d.w, bodyH - th}
}

// layout tells every pane its size.
func (d *Deck) layout() {
	d.help.Width = d.w
	d.scrub.SetSize(d.w, scrubRows)
	if d.openErr != nil {
		return
	}
	tr, fr := d.places()
	for i, t := range d.tracks {
		t.SetSize(tr[i].w, tr[i].h)
	}
	d.frame.SetSize(fr.w, fr.h)
	d.diff.SetSize(d.w, max(d.h-chromeRows, 3))
	d.forks.SetSize(d.w, max(d.h-chromeRows, 3))
	d.files.SetSize(d.w, max(d.h-chromeRows, 3))
	d.marks.SetSize(d.w, max(d.h-chromeRows, 3))
	d.table.SetSize(d.w, max(d.h-chromeRows, 3))
	d.prompt.SetSize(d.w, 1)
	if d.form != nil {
		d.form.SetSize(d.w, max(d.h-chromeRows, 3))
	}
}

// View draws the deck.
func (d *Deck) View() string {
	if d.w == 0 {
		return ""
	}
	if d.openErr != nil {
		return onScreen(d.errorView(), d.w)
	}
	d.prefetch()
	body := d.body()
	if d.help.ShowAll {
		h := max(d.h-chromeRows, 1)
		body = box(d.helpView(h), d.w, h)
	}
	return onScreen(strings.Join([]string{d.header(), d.scrub.View(), body, d.statusLine(), d.helpLine()}, "\n"), d.w)
}

// prefetch asks each store tape for the frames this screen draws (its
// rows on screen, its first frame and its last, the header's) in one round
// of requests, rather than a round trip a row. In a running program the
// requests go in the background, one round a track at a time, and the
// rows show "…" until fetchedMsg redraws them: the keys never wait on the
// network. Tapes in files need none.
func (d *Deck) prefetch() {
	var wg sync.WaitGroup
	for _, t := range d.tracks {
		if st := d.fetching[t.tl]; !t.tl.Remote() || st != nil && (st.busy || time.Now().Before(st.again)) {
			continue
		}
		n := t.tl.Len()
		spans := append(t.onScreen(), [2]int{0, 0}, [2]int{n - 1, n - 1})
		if allReady(t.tl, spans) {
			continue
		}
		if !d.send.ready() {
			wg.Go(func() { t.tl.Rows(spans...) })
			continue
		}
		if d.fetching == nil {
			d.fetching = map[*timeline.Timeline]*fetchRoundState{}
		}
		d.fetching[t.tl] = &fetchRoundState{busy: true}
		go func(tl *timeline.Timeline) {
			d.send.Send(fetchedMsg{tl, fetchRound(tl, spans)})
		}(t.tl)
	}
	wg.Wait()
}

// fetchRound reads a round of a store tape's rows in the background (a
// variable: tests hold it back to see the screen before it ends).
var fetchRound = func(tl *timeline.Timeline, spans [][2]int) error { return tl.Rows(spans...) }

// fetchRoundState is a store tape's rounds of rows: one on its way, or,
// after one that failed, when to try again.
type fetchRoundState struct {
	busy  bool
	again time.Time
}

// fetchAgain is how long after a round that failed the next one waits:
// a store that is down is not asked again at every redraw.
const fetchAgain = 2 * time.Second

// fetchedMsg says a round of a store tape's rows was read; err is why some
// did not.
type fetchedMsg struct {
	tl  *timeline.Timeline
	err error
}

// retryFetchMsg redraws the screen once a failed round may be tried again.
type retryFetchMsg struct{}

// fetched ends a round of rows: the screen redraws them; a round that
// failed says why and is tried again after fetchAgain.
func (d *Deck) fetched(msg fetchedMsg) tea.Cmd {
	if msg.err == nil {
		delete(d.fetching, msg.tl)
		return nil
	}
	d.fetching[msg.tl] = &fetchRoundState{again: time.Now().Add(fetchAgain)}
	d.status = fmt.Sprintf("reading %s: %v (trying again)", baseName(msg.tl.Path()), msg.err)
	return tea.Tick(fetchAgain, func(time.Time) tea.Msg { return retryFetchMsg{} })
}

// allReady reports whether every frame of spans reads without a request.
func allReady(tl *timeline.Timeline, spans [][2]int) bool {
	for _, sp := range spans {
		for i := max(sp[0], 0); i <= min(sp[1], tl.Len()-1); i++ {
			if !tl.Ready(i) {
				return false
			}
		}
	}
	return true
}

func (d *Deck) body() string {
	bodyH := max(d.h-chromeRows, 1)
	switch {
	case d.pane == paneForm:
		return d.form.View()
	case d.pane == paneDiff:
		return d.diff.View()
	case d.pane == paneForks:
		return d.forks.View()
	case d.pane == paneFiles:
		return d.files.View()
	case d.pane == paneMarkers:
		return d.marks.View()
	case d.pane == paneTable:
		return d.table.View()
	}
	if d.zoom {
		return box(strings.Split(d.frame.View(), "\n"), d.w, bodyH)
	}
	var col []string
	for _, t := range d.tracks {
		col = append(col, t.View())
	}
	left := strings.Join(col, "\n")
	_, fr := d.places()
	if d.w >= wideCols {
		sep := strings.TrimSuffix(strings.Repeat(d.st.Muted.Render("│")+"\n", fr.h), "\n")
		return box(strings.Split(lipgloss.JoinHorizontal(lipgloss.Top, left, sep, d.frame.View()), "\n"), d.w, bodyH)
	}
	return box(strings.Split(left+"\n"+d.frame.View(), "\n"), d.w, bodyH)
}

// header is the top bar: what this run was and what it cost. Where the
// width is short it drops its least important parts first (the command,
// the frame and step counts the scrubber shows too, the tokens, the
// name of the program), so that the cost, the exit and the check's
// verdict stay.
func (d *Deck) header() string {
	tl := d.tracks[0].tl
	var tok, cost, exit, vs string
	counts := counted(int64(tl.Len()), "frame", "frames") + " · " + counted(int64(tl.StepCount()), "step", "steps")
	if t, c, ok := d.totals(d.tracks[0]); ok && (t > 0 || c > 0) { // no "0 tok · $0" for a run without usage
		tok, cost = count(t)+" tok", costText(d.tracks[0].tl, tl.Len()-1, c)
		if tl.Damaged() { // what the frames that do not read held is not in them
			tok, cost = "≥"+tok, "≥"+cost
		}
	}
	exit = exitWord(tl)
	if len(d.tracks) == 2 {
		vs = "vs " + baseName(d.tracks[1].tl.Path())
		if state, _ := d.checkText(d.tracks[1].tl); state != "" {
			vs += " (" + state + ")"
		}
	}
	// The check's verdict sits at the right end, where cutting the title
	// to the width never hides it.
	state, bad := d.checkText(tl)
	state = " " + state + " "
	room := d.w
	if strings.TrimSpace(state) != "" && visibleWidth(state)+12 <= d.w {
		room -= visibleWidth(state)
	} else {
		state = ""
	}
	title := func(brand string, parts ...string) string {
		var kept []string
		for _, p := range parts {
			if p != "" {
				kept = append(kept, p)
			}
		}
		return brand + strings.Join(kept, " · ")
	}
	name := baseName(tl.Path())
	const brand = " JUKEBOX ▸ "
	text := title(brand, name, counts, tok, cost, exit, vs)
	// The command gets what room the figures leave: a long absolute path
	// must not push out the tokens, the cost or the exit.
	if command := timeline.OneLine(tl.Command(), 0); command != "" {
		if left := room - visibleWidth(text+" · ") - 1; left >= 8 {
			text = title(brand, name, timeline.OneLine(command, left), counts, tok, cost, exit, vs)
		}
	}
	for _, shorter := range []string{title(brand, name, tok, cost, exit, vs), title(brand, name, cost, exit, vs), title(" ", name, cost, exit, vs)} {
		if visibleWidth(text) < room {
			break
		}
		text = shorter
	}
	if state == "" {
		return d.st.Header.Render(fit(termtext.Sanitize(text), d.w))
	}
	badge := d.st.HeaderDim.Render(state)
	if bad {
		badge = d.st.Header.Render(state)
	}
	return d.st.Header.Render(fit(termtext.Sanitize(text), room)) + badge
}

// exitWord is how the tape's run ended ("exit 0"), from its run.end
// frame; "" while it has none.
func exitWord(tl *timeline.Timeline) string {
	if r := tl.Peek(tl.Len() - 1); r.Kind == timeline.KindRunEnd && !r.Pending {
		return strings.TrimPrefix(r.Summary, "end ")
	}
	return ""
}

// totals are a track's whole-run tokens and cost, once they are summed
// (IndexCosts); until then the header leaves them out.
func (d *Deck) totals(t *timelineView) (int64, float64, bool) {
	if d.costsLater(t.tl) && !t.tl.CostsIndexed() {
		return 0, 0, false
	}
	tok, cost := t.tl.Totals(t.tl.Len() - 1)
	return tok, cost, true
}

// costText is the cost of the calls up to frame i, marked "+?" when some
// of them have no known price and "~" when some had their usage counted,
// not reported, as `jukebox ls` marks it. A fork's says what of it the
// fork spent, the part its circuit breaker counts (the rest its parent's
// tape answered, as `jukebox cost` says), or that all of it so far came
// from the parent.
func costText(tl *timeline.Timeline, i int, cost float64) string {
	approx := timeline.Approx(tl.Estimated(i))
	s := approx + timeline.USD(cost)
	if tl.Unpriced(i) > 0 {
		s += "+?"
	}
	switch parent, fork := tl.FromParent(i); {
	case fork && parent > 0 && cost-parent <= 0:
		s += " (from the parent)"
	case fork && parent > 0:
		s += " (" + approx + timeline.USD(cost-parent) + " spent)"
	}
	return s
}

// statusLine is the message line: a prompt, a warning, the last message
// or the fork's progress.
func (d *Deck) statusLine() string {
	if d.pane == panePrompt {
		return d.prompt.View()
	}
	right := d.busyText()
	if d.run != nil {
		right = strings.TrimPrefix(right+d.st.Muted.Render(" │ ")+d.run.View(), d.st.Muted.Render(" │ "))
	}
	msg := d.st.Status.Render(d.status)
	if d.status == "" && d.warn != "" {
		msg = d.st.Warn.Render(d.warn)
	}
	if right == "" {
		return fit(" "+msg, d.w)
	}
	// The message is cut (with …) before the fork's progress, never glued
	// to it: two spaces and a bar keep them apart.
	right = d.st.Muted.Render(" │ ") + right
	room := d.w - visibleWidth(right)
	if strings.TrimSpace(d.status+d.warn) == "" {
		return fit("", room) + right
	}
	return fit(" "+msg, room) + right
}

// busyText is the work going on in the background that the status line
// shows until it ends, whatever keys are pressed: a search's sweep, a
// filter reading frames.
func (d *Deck) busyText() string {
	var parts []string
	for _, t := range []string{d.sweepText(), d.tracks[d.focus].projectingText()} {
		if t != "" {
			parts = append(parts, d.st.Accent.Render(t))
		}
	}
	return strings.Join(parts, d.st.Muted.Render(" │ "))
}

func (d *Deck) helpLine() string {
	if d.help.ShowAll {
		// The key as bound (--keys may move help off ?).
		return fit(d.st.Muted.Render(" "+d.keys.Help.Help().Key+"/esc closes this help · ↑↓ pgup pgdn scroll"), d.w)
	}
	return fit(" "+d.help.ShortHelpView(d.ShortHelp()), d.w)
}

// errorView explains why a tape did not open: what, where, and what to try.
func (d *Deck) errorView() string {
	lines := []string{d.st.Header.Render(fit(" JUKEBOX ▸ cannot open "+baseName(d.openPath), d.w)), ""}
	lines = append(lines, " "+d.st.Error.Render("This tape does not open:"), "")
	for _, l := range strings.Split(termtext.Sanitize(d.openErr.Error()), "\n") {
		lines = append(lines, "   "+l)
	}
	if dm, ok := timeline.DamageOf(d.openErr); ok {
		where := fmt.Sprintf("at byte offset %d", dm.Offset)
		if dm.Frame >= 0 {
			where = fmt.Sprintf("in frame %d, %s", dm.Frame, where)
		}
		lines = append(lines, "", " "+d.st.Warn.Render("The damage is "+where+": "+dm.Msg+"."))
	}
	lines = append(lines, "", " "+d.st.Muted.Render("Try: jukebox verify "+d.openPath), "", " "+d.st.Accent.Render("q")+" quit")
	return box(lines, d.w, d.h)
}

// mouse handles the wheel over a pane and clicks on timelines and the bar.
func (d *Deck) mouse(msg tea.MouseMsg) {
	if d.openErr != nil || d.pane == panePrompt || d.pane == paneForm {
		return
	}
	wheel := 0
	switch msg.Button {
	case tea.MouseButtonWheelUp:
		wheel = -3
	case tea.MouseButtonWheelDown:
		wheel = 3
	}
	if d.pane == paneDiff {
		d.diff.scroll(wheel)
		return
	}
	// A press on the bar moves the needle there, and dragging moves it
	// on, wherever the pointer goes, until the button is let go.
	switch {
	case msg.Y == headerRows && msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
		d.dragging = true
		d.tracks[d.focus].SetCursor(d.scrub.frameAt(msg.X))
		return
	case d.dragging && msg.Action == tea.MouseActionMotion:
		d.tracks[d.focus].SetCursor(d.scrub.frameAt(msg.X))
		return
	case d.dragging && msg.Action == tea.MouseActionRelease:
		d.dragging = false
		return
	}
	tr, fr := d.places()
	for i, r := range tr {
		if r.has(msg.X, msg.Y) {
			d.trackMouse(i, msg, wheel, msg.Y-r.y)
			return
		}
	}
	if fr.has(msg.X, msg.Y) && wheel != 0 {
		if wheel < 0 {
			d.frame.vp.ScrollUp(-wheel)
		} else {
			d.frame.vp.ScrollDown(wheel)
		}
	}
}

func (d *Deck) trackMouse(i int, msg tea.MouseMsg, wheel, y int) {
	tv := d.tracks[i]
	switch {
	case wheel != 0:
		tv.SetCursor(tv.cursor + wheel/3)
	case msg.Action == tea.MouseActionPress && msg.Button == tea.MouseButtonLeft:
		if row := tv.rowAt(y); row >= 0 {
			tv.SetCursor(row)
		}
		d.focus, d.pane = i, paneTracks
	}
}
