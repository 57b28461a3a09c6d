package tui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// maxFrameLines bounds what the frame view lays out for one frame.
const maxFrameLines = 4000

// rawBlobBytes is how much of each blob the raw view prints; a JSON blob
// up to maxReadableBlob is laid out to read first.
const (
	rawBlobBytes    = 4096
	maxReadableBlob = 256 << 10
)

// frameView shows the frame under the needle in full: for an LLM call the
// context window the model saw and its answer (rendered as it streamed in
// while playing), for a tool its arguments and result, for a file change
// its diff; `r` shows the raw payload, offsets and blob hashes instead.
type frameView struct {
	st      *Styles
	keys    frameKeys
	vp      viewport.Model
	w, h    int
	focused bool
	raw     bool

	tl     *timeline.Timeline
	seq    int
	detail *timeline.Detail
	err    error
	// pending: the detail of a store tape's frame is being read in the
	// background (later, set in a running program), and detailMsg
	// brings it.
	pending bool
	later   func(func() tea.Msg)
	stream  *time.Duration // while playing a call: time since its request
	shown   string         // what the content was made for
	// live is a fork's call in flight, streamed so far, shown under the
	// frame it was forked at (SetLive); liveID tells its versions apart.
	live, liveID string
	// mark is the text of the last search (lower case), highlighted where
	// it shows; marked is the frame last scrolled to its first match.
	mark   string
	marked int
	// answered is the response frame last scrolled to its answer (a
	// response frame opens there, its context above); answerAt is the
	// line of the answer's rule in the content shown, plus 1.
	answered, answerAt int
	// unwrapped lays the content out for outside the turntable: lines
	// as long as they are (takeout.go).
	unwrapped bool
}

// Mark highlights text (a search's, "" for none) and scrolls the frame
// to its first match.
func (m *frameView) Mark(text string) {
	m.mark, m.marked = strings.ToLower(text), -1
	m.refresh()
}

// SetLive shows text under the frame as a fork's call in flight (id
// changes whenever text does), or nothing when text is "".
func (m *frameView) SetLive(text, id string) {
	if text == "" {
		id = ""
	}
	m.live, m.liveID = text, id
	m.refresh()
}

func newFrameView(st *Styles) *frameView {
	return &frameView{st: st, keys: newFrameKeys(), vp: viewport.New(0, 0), seq: -1, marked: -1, answered: -1}
}

// SetSize sets the pane's size, title included.
func (m *frameView) SetSize(w, h int) {
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 0)
	m.shown = ""
	m.refresh()
}

// ShortHelp is the frame view's part of the help line.
func (m *frameView) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Up, m.keys.Down, m.keys.PageDown, m.keys.Back}
}

// FullHelp is every frame view key.
func (m *frameView) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Back}}
}

// update scrolls the frame; it reports whether the key was one of its
// own (the deck gives the others to the timeline, so the needle moves
// from here too).
func (m *frameView) update(km tea.KeyMsg) bool {
	switch k := m.keys; {
	case scroll(&m.vp, km, k.Up, k.Down, k.PageUp, k.PageDown):
	case key.Matches(km, k.Top):
		m.vp.GotoTop()
	case key.Matches(km, k.Bottom):
		m.vp.GotoBottom()
	default:
		return false
	}
	return true
}

// scroll moves vp by a line (up, down) or a page (pgUp, pgDown) when km
// is one of those keys, and reports whether it was.
func scroll(vp *viewport.Model, km tea.KeyMsg, up, down, pgUp, pgDown key.Binding) bool {
	switch {
	case key.Matches(km, up):
		vp.ScrollUp(1)
	case key.Matches(km, down):
		vp.ScrollDown(1)
	case key.Matches(km, pgUp):
		vp.PageUp()
	case key.Matches(km, pgDown):
		vp.PageDown()
	default:
		return false
	}
	return true
}

// Show puts frame seq of tl in the view; stream, when set, is how long
// after its request a call is being played.
func (m *frameView) Show(tl *timeline.Timeline, seq int, stream *time.Duration) {
	if tl != m.tl || seq != m.seq {
		m.tl, m.seq = tl, seq
		m.detail, m.err, m.pending = nil, nil, false
		switch {
		case tl == nil || seq < 0 || seq >= tl.Len():
		case m.later != nil && tl.Remote():
			// A store's frame and its blobs may take round trips: read in
			// the background, so that the keys never wait on the network.
			m.pending = true
			m.later(func() tea.Msg {
				d, err := tl.Detail(seq)
				return detailMsg{tl, seq, d, err}
			})
		default:
			m.detail, m.err = tl.Detail(seq)
		}
		m.vp.GotoTop()
		m.answered = -1
	}
	m.stream = stream
	m.refresh()
}

// detailMsg is a store frame's detail, read in the background.
type detailMsg struct {
	tl     *timeline.Timeline
	seq    int
	detail *timeline.Detail
	err    error
}

// gotDetail shows a detail read in the background, if its frame is still
// the one shown.
func (m *frameView) gotDetail(msg detailMsg) {
	if msg.tl != m.tl || msg.seq != m.seq || !m.pending {
		return
	}
	m.detail, m.err, m.pending = msg.detail, msg.err, false
	m.shown = ""
	m.refresh()
}

// ToggleRaw switches between the readable and the raw view.
func (m *frameView) ToggleRaw() { m.raw = !m.raw; m.refresh() }

func (m *frameView) refresh() {
	id := fmt.Sprintf("%p/%d/%v/%d/%s/%s", m.tl, m.seq, m.raw, m.w, m.liveID, m.mark)
	if m.stream != nil {
		id += "/" + m.stream.String()
	}
	if id == m.shown {
		return
	}
	m.shown = id
	out := m.content()
	if m.live != "" {
		var b lines
		b.w = max(m.w-1, 10)
		b.head(m.st.Fork, "⑂ the fork's call, live · streaming…")
		b.add(m.st.Text, m.live)
		out = append(out, b.out...)
	}
	toAnswer := m.detail != nil && m.detail.Kind == timeline.KindLLMResponse && m.answerAt > 0 && !m.raw
	answerAt := m.answerAt
	if len(out) > maxFrameLines {
		b := lines{w: max(m.w-1, 10)}
		half := maxFrameLines / 2
		if toAnswer && answerAt-1 > half && answerAt-1 < len(out) {
			// The answer beyond the cut: the context is cut in its middle
			// instead. The frame opened scrolled to an answer it had cut,
			// on blank lines, and paging ended before it.
			b.add(m.st.Muted, fmt.Sprintf("… cut here on screen, %s lines of the request's context left out: o pages the whole frame, w writes it to a file",
				count(int64(answerAt-1-half))))
			rest := out[answerAt-1:]
			var after lines
			after.w = b.w
			if len(rest) > half {
				after.add(m.st.Muted, fmt.Sprintf("… cut here on screen, %s more lines: o pages the whole frame, w writes it to a file", count(int64(len(rest)-half))))
				rest = rest[:half]
			}
			out = slices.Concat(out[:half], b.out, rest, after.out)
			answerAt = half + len(b.out) + 1
		} else {
			b.add(m.st.Muted, fmt.Sprintf("… cut here on screen, %s more lines: o pages the whole frame, w writes it to a file", count(int64(len(out)-maxFrameLines))))
			out = append(out[:maxFrameLines], b.out...)
		}
	}
	if toAnswer {
		// The answer's rule can scroll to the top however short it is.
		for len(out) < answerAt-1+m.vp.Height {
			out = append(out, "")
		}
	}
	m.vp.SetContent(strings.Join(out, "\n"))
	if m.mark != "" && m.marked != m.seq {
		m.marked = m.seq
		for i, l := range out {
			if strings.Contains(strings.ToLower(ansi.Strip(l)), m.mark) {
				m.vp.SetYOffset(max(i-2, 0))
				m.answered = m.seq // the match, not the answer, is what was looked for
				break
			}
		}
	}
	if toAnswer && m.answered != m.seq {
		m.answered = m.seq
		m.vp.SetYOffset(answerAt - 1)
	}
}

// View draws the title and the scrolled content.
func (m *frameView) View() string {
	title := "frame"
	if m.err != nil && m.tl != nil && m.seq >= 0 && m.seq < m.tl.Len() {
		// A frame that does not read has no detail: its number, kind and
		// time come from the index, which did read.
		k, at := m.tl.KindAt(m.seq)
		title = fmt.Sprintf("frame %d · %s · %s · does not read", m.seq, k, timeline.Clock(at))
	}
	if d := m.detail; d != nil {
		title = fmt.Sprintf("frame %d · %s · %s · %s · s%d", d.Seq, d.Kind, timeline.Clock(d.Time), stepText(m.tl.StepNumber(d.Seq), m.tl.StepCount()), d.Stream)
	}
	if m.raw {
		title += " · raw"
	}
	if m.vp.TotalLineCount() > m.vp.Height && m.vp.Height > 0 {
		title += fmt.Sprintf(" · %d%%", int(m.vp.ScrollPercent()*100))
	}
	st := m.st.Title
	if m.focused {
		st = m.st.TitleFocused
	}
	return st.Render(fit(title, m.w)) + "\n" + box(strings.Split(m.vp.View(), "\n"), m.w, m.vp.Height)
}

// content lays the frame out as lines of at most m.w cells.
func (m *frameView) content() []string {
	b := lines{mark: m.mark, markStyle: m.st.Match, plain: m.unwrapped}
	b.w = max(m.w-1, 10)
	if m.unwrapped {
		b.w = 1 << 20
	}
	if m.detail != nil {
		m.damage(&b, m.detail.Errs()) // first: a damaged frame is never shown as merely empty
	}
	switch d := m.detail; {
	case m.err != nil:
		m.unreadable(&b, m.err)
	case d == nil && m.pending:
		b.add(m.st.Muted, fmt.Sprintf("fetching frame %d from the store…", m.seq))
	case d == nil:
		b.add(m.st.Muted, "(no frame)")
	case m.raw:
		m.rawText(&b, d)
	case d.Call != nil:
		m.callText(&b, d.Call)
	case d.Tool != nil:
		m.toolText(&b, d.Tool)
	case d.File != nil:
		m.fileText(&b, d.File)
	default:
		b.add(m.st.Kind(d.Kind), d.Summary)
		b.add(m.st.Text, readableJSON(string(d.Payload)))
	}
	m.answerAt = b.answerAt
	return b.out
}

// lines collects wrapped, styled lines; mark, when set (lower case), is
// drawn in markStyle wherever a line holds it.
type lines struct {
	w         int
	out       []string
	mark      string
	markStyle lipgloss.Style
	plain     bool // section rules are not drawn to the width (text for outside)
	answerAt  int  // 1 + the line of the answer's rule, 0 when there is none
}

// render draws one line in style s, its matches of the mark in the mark's
// style.
func (b *lines) render(s interface{ Render(...string) string }, line string) string {
	lower := strings.ToLower(line)
	if b.mark == "" || len(lower) != len(line) || !strings.Contains(lower, b.mark) {
		return s.Render(line)
	}
	var out strings.Builder
	for {
		i := strings.Index(lower, b.mark)
		if i < 0 {
			break
		}
		if i > 0 {
			out.WriteString(s.Render(line[:i]))
		}
		out.WriteString(b.markStyle.Render(line[i : i+len(b.mark)]))
		line, lower = line[i+len(b.mark):], lower[i+len(b.mark):]
	}
	if line != "" {
		out.WriteString(s.Render(line))
	}
	return out.String()
}

// add wraps text to the width and appends it, every line in style s. A
// line's leading spaces indent its wrapped continuation lines too. On
// screen, a text longer than maxScreenText is cut and a line says so.
func (b *lines) add(s interface{ Render(...string) string }, text string) {
	cut := ""
	if !b.plain { // text for outside the turntable is never cut
		text, cut = cutForScreen(text)
		// Wrapped as drawn: a family emoji counted as one wide grapheme
		// was drawn as its members side by side, and the screen's last
		// pass cut what followed it ("emo…", "ji" lost).
		text = termtext.Uniform(text)
	}
	for _, l := range strings.Split(termtext.Sanitize(timeline.ExpandTabs(text)), "\n") {
		body := strings.TrimLeft(l, " ")
		pad := l[:len(l)-len(body)]
		if len(pad) > b.w/2 {
			pad, body = "", l
		}
		for _, w := range strings.Split(ansi.Wrap(body, b.w-len(pad), ""), "\n") {
			b.out = append(b.out, b.render(s, pad+w))
		}
	}
	if cut != "" {
		b.out = append(b.out, b.render(s, cut))
	}
}

// head appends a section rule with a title. A title wider than the rule
// is never cut (it holds an error's reason, a context's fill): the rule
// holds the facts (" · "-separated) that fit, the rest wrap below it.
func (b *lines) head(s interface{ Render(...string) string }, title string) {
	if b.plain {
		b.out = append(b.out, s.Render("── "+title+" ──"))
		return
	}
	facts := strings.Split(title, " · ")
	n := len(facts)
	for n > 0 && ansi.StringWidth(strings.Join(facts[:n], " · "))+4 > b.w {
		n--
	}
	if n == 0 { // not even the first fact fits: the title wraps, whole
		b.add(s, "── "+title)
		return
	}
	t := "── " + strings.Join(facts[:n], " · ") + " "
	b.out = append(b.out, s.Render(t+strings.Repeat("─", max(b.w-ansi.StringWidth(t), 0))))
	if n < len(facts) {
		b.add(s, "   "+strings.Join(facts[n:], " · "))
	}
}

func (m *frameView) callText(b *lines, c *timeline.CallDetail) {
	st := m.st
	what := strings.TrimSpace(fmt.Sprintf("%s %s · %s · %s", c.Method, c.Path, c.Model, c.Provider))
	if c.Stream {
		what += " · stream"
	}
	b.add(st.LLM, what)
	if len(c.Params) > 0 {
		b.add(st.Muted, strings.Join(c.Params, " · "))
	}
	if len(c.Tools) > 0 {
		b.add(st.Muted, "tools offered: "+strings.Join(c.Tools, ", "))
	}
	if c.RequestErr != nil {
		b.head(st.Error, fmt.Sprintf("context · frame %d · unreadable", c.Request))
		b.add(st.Error, "  the request body does not read: what the model saw is not known (see above)")
		m.answer(b, c)
		return
	}
	b.head(st.Title, "context · "+strings.Join(contextFacts(c), " · "))
	if c.System != "" {
		b.add(st.Role, "system prompt")
		b.add(st.Text, indentText(c.System))
	}
	for i, msg := range c.Messages {
		if (msg.Role == "system" || msg.Role == "developer") && msg.Text == c.System {
			continue // shown above
		}
		role := fmt.Sprintf("%s  ~%d tok", msg.Role, msg.Tokens)
		if c.Since >= 0 && i >= c.New {
			b.add(st.Insert, role+"  + new")
		} else {
			b.add(st.Role, role)
		}
		b.add(st.Text, indentText(msg.Text))
	}
	m.answer(b, c)
}

// contextFacts are the context heading's parts: how many messages, which
// are new since the previous call of the conversation, and how full the
// model's context window was.
func contextFacts(c *timeline.CallDetail) []string {
	facts := []string{counted(int64(len(c.Messages)), "message", "messages")}
	switch n := len(c.Messages) - c.New; {
	case c.Since < 0:
		facts = append(facts, "first call of this conversation")
	case n == 0:
		facts = append(facts, fmt.Sprintf("nothing new since frame %d", c.Since))
	default:
		facts = append(facts, fmt.Sprintf("%d new since frame %d", n, c.Since))
	}
	fill := count(c.Fill)
	if !c.FillCounted {
		fill = "~" + fill
	}
	if c.Window > 0 {
		pct := float64(c.Fill) * 100 / float64(c.Window)
		facts = append(facts, fmt.Sprintf("%s of %s tok (%s)", fill, short(c.Window), percent(pct)))
	} else {
		facts = append(facts, fill+" tok")
	}
	return facts
}

// short is a round count: 128k, 1.05M.
func short(n int64) string {
	switch {
	case n >= 1_000_000:
		return strconv.FormatFloat(float64(n)/1e6, 'g', 3, 64) + "M"
	case n >= 1_000:
		return strconv.FormatFloat(float64(n)/1e3, 'g', 3, 64) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// percent shows a share of a whole: "<1%" rather than a 0% that hides a
// non-empty context.
func percent(p float64) string {
	if p > 0 && p < 1 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func (m *frameView) answer(b *lines, c *timeline.CallDetail) {
	st := m.st
	if c.Response < 0 {
		b.head(st.Warn, "no response on the tape")
		return
	}
	if c.ResponseErr != nil {
		b.head(st.Error, fmt.Sprintf("response · frame %d · unreadable", c.Response))
		b.add(st.Error, "  the response body does not read: the answer is not known (see above)")
		return
	}
	text, done := c.Answer, true
	if m.stream != nil {
		text, done = c.Streamed(*m.stream)
	}
	approx := ""
	if c.Estimated {
		approx = "~"
	}
	cost := approx + timeline.USD(c.Cost)
	if !c.Priced && c.Usage.Total() > 0 {
		cost = "unpriced"
	}
	h := fmt.Sprintf("response · %d · %s%s→%s%s tok · %s · %s", c.Status, approx, count(c.Usage.Input), approx, count(c.Usage.Output),
		cost, c.Elapsed.Round(time.Millisecond))
	if c.Usage.Total() == 0 { // not "0→0 tok · $0": nothing was counted
		h = fmt.Sprintf("response · %d · no usage reported · %s", c.Status, c.Elapsed.Round(time.Millisecond))
	}
	if !done {
		h = "response · streaming…"
	}
	if n := c.ResponseCoding.Note(); n != "" {
		h += " · " + n
	}
	style := st.Title
	if c.Error != "" || c.Status >= 400 {
		style, h = st.Error, h+" · "+c.Error
	}
	b.answerAt = len(b.out) + 1
	b.head(style, h)
	if !done {
		text += "▌"
	}
	b.add(st.Text, indentText(text))
}

func (m *frameView) toolText(b *lines, t *timeline.ToolDetail) {
	st := m.st
	src := ""
	if t.Source != "" {
		src = " · " + t.Source
	}
	b.add(st.Tool, fmt.Sprintf("%s · %s%s", t.Name, t.ID, src))
	b.head(st.Title, fmt.Sprintf("arguments · frame %d", t.Call))
	b.add(st.Text, indentText(readableJSON(t.Args)))
	if t.Result < 0 {
		b.head(st.Warn, "no result on the tape")
		return
	}
	if t.Err != nil {
		b.head(st.Error, fmt.Sprintf("result · frame %d · unreadable", t.Result))
		b.add(st.Error, "  the result body does not read (see above)")
		return
	}
	h, style := fmt.Sprintf("result · frame %d · %s", t.Result, t.Elapsed), st.Title
	if t.IsError {
		h, style = h+" · error", st.Error
	}
	b.head(style, h)
	b.add(st.Text, indentText(readableJSON(t.Output)))
}

func (m *frameView) fileText(b *lines, f *timeline.FileDetail) {
	st := m.st
	b.add(st.File, f.Op+" "+f.Path)
	if f.Err != nil {
		b.head(st.Error, "content · unreadable")
		b.add(st.Error, "  the file's content does not read (see above)")
		return
	}
	if f.Diff == "" || f.Binary {
		b.head(st.Title, "content")
		b.add(st.Text, f.Content)
		return
	}
	b.head(st.Title, "diff")
	for _, l := range strings.Split(strings.TrimRight(f.Diff, "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++"):
			b.add(st.Insert, l)
		case strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "---"):
			b.add(st.Error, l)
		default:
			b.add(st.Muted, l)
		}
	}
}

func (m *frameView) rawText(b *lines, d *timeline.Detail) {
	st := m.st
	b.add(st.Muted, fmt.Sprintf("offset %d · record %d bytes · payload %d bytes · kind %s · stream %d",
		d.Offset, d.Size, len(d.Payload), d.Kind, d.Stream))
	b.head(st.Title, "payload (laid out to read; jukebox show --frame N --json for the bytes)")
	b.add(st.Text, escapeLines(readableJSON(string(d.Payload))))
	for _, r := range d.Blobs {
		if r.Err != nil {
			b.head(st.Error, fmt.Sprintf("blob %s · unreadable", r.Role))
			b.add(st.Accent, "blake3 "+r.Hash.String())
			continue
		}
		b.head(st.Title, fmt.Sprintf("blob %s · %d bytes", r.Role, r.Size))
		b.add(st.Accent, "blake3 "+r.Hash.String())
		if raw, err := m.tl.Tape().Blob(r.Hash); err == nil {
			text := string(raw)
			if len(raw) <= maxReadableBlob {
				text = readableJSON(text) // a JSON body laid out to read
			}
			head := text[:min(len(text), rawBlobBytes)]
			b.add(st.Text, escapeLines(head))
			if len(text) > len(head) {
				b.add(st.Muted, fmt.Sprintf("… %d more bytes", len(text)-len(head)))
			}
		}
	}
	if len(d.Blobs) == 0 {
		b.add(st.Muted, "no blobs")
	}
}

// escapeLines is text for the raw view: each line with Go escapes for
// what must not reach the terminal (\x1b, \u200b, \xff), so that the
// bytes can be read, where the readable view shows � or ␛.
func escapeLines(text string) string {
	ls := strings.Split(text, "\n")
	for i, l := range ls {
		ls[i] = termtext.Escape(l)
	}
	return strings.Join(ls, "\n")
}

func indentText(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// unreadable shows why the frame itself does not read.
func (m *frameView) unreadable(b *lines, err error) {
	var fe *timeline.FrameError
	if errors.As(err, &fe) {
		m.damage(b, []*timeline.FrameError{fe})
		return
	}
	b.add(m.st.Error, "cannot read this frame: "+err.Error())
}

// damage shows each part of the frame (or of the call or tool it pairs
// with) that does not read: which frame and blob, the byte offset of the
// damage, and the reason.
func (m *frameView) damage(b *lines, errs []*timeline.FrameError) {
	st := m.st
	for _, e := range errs {
		what := "its record"
		if !e.Blob.IsZero() {
			what = fmt.Sprintf("its %s blob %s", e.Role, e.Blob.Short())
		}
		if e.Unread { // an I/O error, a store that did not answer: no damage
			b.head(st.Error, fmt.Sprintf("✖ frame %d did not arrive", e.Frame))
			b.add(st.Error, fmt.Sprintf("  %s could not be read (it is read again when the needle comes back):", what))
			b.add(st.Error, "  "+e.Reason)
			continue
		}
		b.head(st.Error, fmt.Sprintf("✖ frame %d is damaged", e.Frame))
		if e.Offset >= 0 {
			what += fmt.Sprintf(" at byte offset %d", e.Offset)
		}
		b.add(st.Error, fmt.Sprintf("  %s does not read:", what))
		b.add(st.Error, "  "+e.Reason)
	}
	if len(errs) > 0 {
		b.add(st.Muted, "  jukebox verify checks the whole tape")
	}
}

// frameKeys scroll the frame view when it has the focus.
type frameKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom, Back key.Binding
}

func newFrameKeys() frameKeys {
	return frameKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "bottom")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back to the timeline")),
	}
}
