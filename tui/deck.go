package tui

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/timeline"
)

// Options configure the deck.
type Options struct {
	Theme    themes.Theme       // default themes.Default()
	Renderer *lipgloss.Renderer // default lipgloss.DefaultRenderer()
	// Fork runs a fork; nil is engine.Fork. The deck fills in Parent, Frame,
	// Overrides, Upstreams, OnEvent and the agent's (discarded) stdio.
	Fork func(context.Context, engine.ForkOptions) (*engine.Result, error)
	// PrepareFork, when set, completes a fork's options before it runs: the
	// tape path, working directory, booth. Without it the fork tape goes next
	// to the parent as NAME-fork-TIME.jbx.
	PrepareFork func(*engine.ForkOptions) error
	Upstreams   map[string]string // where a fork's live calls go
	// Remote opens the tapes URLs name (a store's, tapestore.Opener), and
	// is handed to each fork of one; nil reads files only.
	Remote timeline.RemoteOpener
	// Now is the clock for playback; default time.Now.
	Now func() time.Time
	// IndexLimit is the number of frames up to which cumulative cost is
	// summed before the first screen; longer tapes are summed in the
	// background. 0 means 20,000.
	IndexLimit int
	// Key, when set, is a seal key: the check of each tape on open also
	// checks its seal (jukebox play --key-file).
	Key []byte
	// Context ends the turntable, its forks and its background work when
	// done (main's signal-aware context); nil is context.Background.
	Context context.Context
	// Frame, when set, is where the needle starts on the first tape
	// (jukebox play --frame N, the link other tools give).
	Frame *int
	// KeepMarkers keeps markers beside each tape (NAME.jbx.d/markers.json)
	// and brings them back on the next open; without it they last the
	// session.
	KeepMarkers bool
	// Keys are the user's key bindings (LoadKeymap), over the defaults.
	Keys Keymap
	// ListModels asks an upstream for its models, for the fork form's
	// picker; nil is engine.ListModels.
	ListModels func(ctx context.Context, provider, base string, env []string) ([]string, error)
	// Verified, when set, is the header's word on a tape the turntable does
	// not check itself on open (a store's tape, which would be fetched
	// whole): what was checked at upload. bad marks it as a warning.
	Verified func(path string) (text string, bad bool)
	// StoreKin, when set, lists the tapes of the store that the tape URL
	// lies in, as kin (from their summary objects, no tape read): where b
	// looks for the forks of a store's tape.
	StoreKin func(ctx context.Context, tapeURL string) ([]timeline.Kin, error)
	// Getenv reads PAGER, VISUAL and EDITOR for o and v; nil is os.Getenv.
	Getenv func(string) string
	// Clipboard is where y writes its OSC 52 sequence; nil is os.Stdout,
	// the terminal (Run makes it the program's output: one *os.File, whose
	// writes Go serializes, so the sequence never lands inside a frame).
	Clipboard io.Writer
}

// pane says what has the keyboard.
type pane int

const (
	paneTracks  pane = iota // a timeline
	paneFrame               // the frame view
	panePrompt              // the go-to or search prompt
	paneForm                // the fork form
	paneDiff                // the diff pane
	paneForks               // the fork list
	paneFiles               // the workspace at the needle
	paneMarkers             // the marker list
	paneTable               // the step table
)

// Deck is the root model of the turntable. It owns the layout and routes
// messages to its children; the children do the work.
type Deck struct {
	o        Options
	st       *Styles
	keys     deckKeys
	fkeys    forkKeys
	help     help.Model
	w, h     int
	send     *sender
	openErr  error
	openPath string

	tracks []*timelineView
	focus  int // index in tracks of the timeline the needle follows
	pane   pane
	scrub  *scrubber
	frame  *frameView
	prompt *prompt
	form   *forkForm
	run    *forkRun
	diff   *diffPane
	files  *filesPane
	marks  *markersPane
	table  *stepTable
	forks  *forkList
	play   player
	// family are the tape opened, the forks run from it and the tapes
	// found forked from them (forklist.go).
	family []forkEntry

	status, warn string
	lastQuery    string
	found        *matchList // every frame the last search matches, once counted
	lastGoto     string     // the last frame number asked for (g)
	zoom         bool       // the frame view has the whole body (+)
	filterText   string     // the rows shown hold it (|); "" for every row
	filterGen    int        // counts the filter prompt's edits
	lastWrite    string     // the last file a frame was written to (w)
	helpTop      int        // the help overlay's first line shown (it scrolls)
	dragging     bool       // the needle follows the pointer on the scrubber
	searching    context.CancelFunc
	sweeping     *sweep // the search reading the whole tape, while it runs
	ctx          context.Context
	stop         context.CancelFunc
	checks       map[*timeline.Timeline]*tapeCheck       // the check of each tape opened from a file (check.go)
	fetching     map[*timeline.Timeline]*fetchRoundState // a store tape's rounds of rows (prefetch)
}

// sender lets a command started by the deck reach the running program
// (tea.Program.Send), once the program exists.
type sender struct {
	mu sync.Mutex
	fn func(tea.Msg)
}

func (s *sender) set(fn func(tea.Msg)) { s.mu.Lock(); s.fn = fn; s.mu.Unlock() }

// ready reports whether messages reach a running program (tests that drive
// the deck by hand have none: work that would go in the background is
// done at once there).
func (s *sender) ready() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.fn != nil }

func (s *sender) Send(msg tea.Msg) {
	s.mu.Lock()
	fn := s.fn
	s.mu.Unlock()
	if fn != nil {
		fn(msg)
	}
}

// New opens the tapes (one, or two to compare) and returns the deck. A tape
// that does not open does not fail New: the deck shows why instead.
func New(paths []string, o Options) *Deck {
	if o.Theme.Name == "" {
		o.Theme = themes.Default()
	}
	if o.Renderer == nil {
		o.Renderer = lipgloss.DefaultRenderer()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.IndexLimit == 0 {
		o.IndexLimit = 20000
	}
	st := NewStyles(o.Theme, o.Renderer)
	d := &Deck{o: o, st: &st, keys: newDeckKeys(), fkeys: newForkKeys(), help: help.New(), send: &sender{},
		scrub: &scrubber{st: &st, speed: 1}, frame: newFrameView(&st), prompt: newPrompt(&st),
		diff: newDiffPane(&st), files: newFilesPane(&st), marks: newMarkersPane(&st), table: newStepTable(&st), forks: newForkList(&st), play: player{speed: 1}}
	d.help.Styles = st.Help
	o.Keys.apply(&d.keys)
	d.ctx, d.stop = context.WithCancel(cmp.Or(o.Context, context.Background()))
	labels := []string{"", ""}
	if len(paths) == 2 {
		labels = []string{"left", "right"}
	}
	for i, p := range paths {
		tl, err := timeline.OpenWith(p, o.Remote)
		if err != nil {
			d.openErr, d.openPath = err, p
			return d
		}
		if !d.costsLater(tl) {
			tl.IndexCosts(d.ctx)
		}
		tv := newTimelineView(tl, &st, labels[i])
		o.Keys.apply(&tv.keys)
		if tl.Recording() {
			tv.live, tv.recording = true, true
			if fi, err := os.Stat(p); err == nil {
				tv.size = fi.Size()
			}
			tv.SetCursor(tl.Len() - 1) // the newest frame, followed
		}
		if o.KeepMarkers {
			tv.loadMarkers()
		}
		d.tracks = append(d.tracks, tv)
	}
	if len(d.tracks) == 0 {
		d.openErr = errors.New("no tape given")
		return d
	}
	d.warn = recoveryWarning(d.tracks)
	for _, t := range d.tracks {
		if t.markersErr != nil {
			d.status = fmt.Sprintf("markers not loaded: %v", t.markersErr)
		}
	}
	d.scrub.tv = d.tracks[0]
	d.forkFamily()
	if o.Frame != nil {
		d.gotoFrame(strconv.Itoa(*o.Frame))
	}
	d.sync()
	return d
}

// costsLater reports whether a tape's running totals are summed in the
// background rather than before the first screen: a long tape, or one
// read from a store, whose every call would be a round trip.
func (d *Deck) costsLater(tl *timeline.Timeline) bool {
	return tl.Len() > d.o.IndexLimit || tl.Remote()
}

// SetSend connects the deck to its program: engine events reach the deck
// through send (tea.Program.Send).
func (d *Deck) SetSend(send func(tea.Msg)) {
	d.send.set(send)
	d.frame.later = func(work func() tea.Msg) { go func() { d.send.Send(work()) }() }
}

// Close stops a running fork (closing its tape) and the background work,
// and closes the tapes.
func (d *Deck) Close() {
	if d.run != nil {
		d.run.stopAndWait()
	}
	d.stop()
	for _, t := range d.tracks {
		t.tl.Close()
	}
}

// costsIndexedMsg says a timeline's cumulative costs are all summed.
type costsIndexedMsg struct{}

// Init starts checking the tapes, and summing costs for long ones, in the
// background.
func (d *Deck) Init() tea.Cmd {
	cmds := d.startChecks()
	for _, t := range d.tracks {
		if t.recording {
			cmds = append(cmds, followLater(t))
		}
		if d.costsLater(t.tl) {
			tl, ctx := t.tl, d.ctx
			cmds = append(cmds, func() tea.Msg { tl.IndexCosts(ctx); return costsIndexedMsg{} })
		}
	}
	return tea.Batch(cmds...)
}

// Update routes a message to whoever handles it.
func (d *Deck) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		d.w, d.h = msg.Width, msg.Height
		d.layout()
	case tea.KeyMsg:
		if msg.Type == tea.KeyCtrlL { // repaint, as a shell does
			return d, tea.ClearScreen
		}
		cmd = d.keys1(msg)
	case tea.MouseMsg:
		d.mouse(msg)
	default:
		cmd = d.event(msg)
	}
	d.sync()
	return d, cmd
}

// event handles the messages that are not input.
func (d *Deck) event(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tickMsg:
		return d.tick(msg)
	case searchDoneMsg:
		return d.searchDone(msg)
	case filterTickMsg:
		return d.filterTick(msg)
	case sweepMsg:
		return d.swept(msg)
	case projectedMsg:
		cmd, said := msg.tv.projected(msg.p)
		if said != "" {
			d.status = said
		}
		return cmd
	case notFoundMsg:
		d.status = msg.what
	case takeoutMsg:
		d.status = ""
		if msg.err != nil {
			d.status = fmt.Sprintf("%s: %v", msg.what, msg.err)
		}
	case fetchedMsg: // a round of a store tape's rows was read: View draws them
		return d.fetched(msg)
	case retryFetchMsg: // View asks again
	case detailMsg:
		d.frame.gotDetail(msg)
	case forkStreamMsg: // the call in flight grew: sync shows it
	case forkEventMsg, forkTapeMsg, forkDoneMsg, forkReloadMsg:
		return d.forkMsg(msg)
	case diffReadyMsg:
		d.diffReady(msg)
	case filesReadyMsg:
		d.files.ready(msg)
	case stepTableMsg:
		d.table.loaded(msg)
	case forkScanMsg:
		d.forksFound(msg)
	case formModelsMsg:
		if d.form == msg.form {
			d.form.modelsListed(msg)
		}
	case checkDoneMsg:
		d.checkDone(msg)
	case costsIndexedMsg:
	case followTickMsg:
		return d.followLook(msg.tv)
	case followMsg:
		return d.followed(msg)
	default:
		if d.run != nil {
			return d.run.update(msg)
		}
	}
	return nil
}

// keys1 splits runes that arrived together (keys typed faster than the
// terminal is read come as one message, "nn") into one key each, except
// where they are text being typed.
func (d *Deck) keys1(msg tea.KeyMsg) tea.Cmd {
	if msg.Type != tea.KeyRunes || len(msg.Runes) < 2 || msg.Paste || d.modal() {
		return d.key(msg)
	}
	var cmds []tea.Cmd
	for _, r := range msg.Runes {
		cmds = append(cmds, d.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: msg.Alt}))
		d.sync() // a rune that opens a prompt or the form sends the rest there
	}
	return tea.Batch(cmds...)
}

// key routes a key to the pane that has the keyboard.
func (d *Deck) key(msg tea.KeyMsg) tea.Cmd {
	if d.openErr != nil {
		if key.Matches(msg, d.keys.Quit) {
			return tea.Quit
		}
		return nil
	}
	switch d.pane {
	case panePrompt:
		return d.promptKey(msg)
	case paneForm:
		return d.formKey(msg)
	}
	if d.help.ShowAll {
		return d.helpKey(msg)
	}
	if d.run != nil && d.run.running() && key.Matches(msg, d.fkeys.Cancel) {
		d.run.cancel()
		d.status = "stopping the fork…"
		return nil
	}
	if cmd, ok := d.globalKey(msg); ok {
		return cmd
	}
	switch d.pane {
	case paneDiff:
		if why := d.notNow(msg); why != "" {
			d.status = why
			return nil
		}
		return d.diffKey(msg)
	case paneForks:
		return d.forksKey(msg)
	case paneFiles:
		if d.files.update(msg) == dismissed {
			d.pane = paneTracks
		}
		return nil
	case paneTable:
		if d.table.update(msg) != stay {
			d.pane = paneTracks
		}
		return nil
	case paneMarkers:
		v, cmd := d.marks.update(msg)
		if v != stay {
			d.pane = paneTracks
		}
		return cmd
	case paneFrame:
		if key.Matches(msg, d.frame.keys.Back) {
			d.pane = paneTracks
			return nil
		}
		if d.frame.update(msg) {
			return nil
		}
	}
	if why := d.notNow(msg); why != "" {
		d.status = why
		return nil
	}
	return d.trackKey(msg)
}

// notNow says why a key does nothing at this moment (its binding is
// switched off), or "" when it does something: no key is pressed in vain
// without a word.
func (d *Deck) notNow(msg tea.KeyMsg) string {
	if enabledFor(d.active().FullHelp(), msg) {
		return ""
	}
	tv := d.tracks[d.focus]
	for _, c := range []struct {
		b     key.Binding
		why   func() string
		track bool // a timeline's key
	}{
		{d.keys.Diff, func() string {
			if d.run != nil && d.run.running() {
				return "a fork is running: d diffs it once it ends (ctrl+c stops it)"
			}
			return "d compares two timelines: fork first (f), or open two tapes (jukebox play A.jbx B.jbx)"
		}, false},
		{d.keys.Fork, func() string { return d.forkWhy(tv) }, false},
		{d.keys.Check, func() string { return "this tape is checked already, or is still being written (the header says)" }, false},
		{d.keys.Focus, func() string { return "the diff has the screen: esc or d closes it" }, false},
		{tv.keys.Speed, func() string { return "x sets the playback speed while playing: space plays" }, true},
		{tv.keys.SearchNext, func() string { return "no search yet: / searches" }, true},
		{tv.keys.SearchPrev, func() string { return "no search yet: / searches" }, true},
		{tv.keys.NextMark, func() string { return "no markers yet: m sets one on the frame under the needle" }, true},
		{tv.keys.PrevStep, func() string { return tv.noStep("the needle is at the first frame") }, true},
		{tv.keys.NextStep, func() string { return tv.noStep("the needle is in the last step") }, true},
		{tv.keys.Prev, func() string { return "the needle is at the first frame" }, true},
		{tv.keys.Up, func() string { return "the needle is at the first frame" }, true},
		{tv.keys.Home, func() string { return "the needle is at the first frame" }, true},
		{tv.keys.PageUp, func() string { return "the needle is at the first frame" }, true},
		{tv.keys.Next, func() string { return "the needle is at the last frame" }, true},
		{tv.keys.Down, func() string { return "the needle is at the last frame" }, true},
		{tv.keys.End, func() string { return "the needle is at the last frame" }, true},
		{tv.keys.PageDown, func() string { return "the needle is at the last frame" }, true},
	} {
		if d.pane == paneDiff && c.track {
			continue // the diff's own keys say for themselves
		}
		if !c.b.Enabled() && slices.Contains(c.b.Keys(), msg.String()) {
			return c.why()
		}
	}
	return ""
}

// forkWhy says why f cannot fork now.
func (d *Deck) forkWhy(tv *timelineView) string {
	_, canFork := d.forkPoint(tv)
	switch {
	case d.run != nil && d.run.running():
		return "a fork is running: ctrl+c stops it"
	case d.pane == paneDiff:
		return "close the diff first (esc), then fork"
	case len(d.tracks) == 2 && !d.forkShown():
		return "two tapes are open for comparing: to fork, open one (jukebox play TAPE)"
	case !canFork:
		return "no model call at or after the needle to fork at"
	}
	return ""
}

// enabledFor reports whether an enabled binding of groups takes msg.
func enabledFor(groups [][]key.Binding, msg tea.KeyMsg) bool {
	for _, g := range groups {
		for _, b := range g {
			if key.Matches(msg, b) {
				return true
			}
		}
	}
	return false
}

// globalKey handles the keys that work on every pane but the form and prompts.
func (d *Deck) globalKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	k := d.keys
	switch {
	case key.Matches(msg, k.Quit):
		return tea.Quit, true
	case key.Matches(msg, k.Help):
		d.help.ShowAll = !d.help.ShowAll
	case key.Matches(msg, k.Focus):
		d.cycleFocus()
	case key.Matches(msg, k.Raw):
		d.frame.ToggleRaw()
	case key.Matches(msg, k.Zoom):
		d.zoom = !d.zoom
		d.layout()
		d.status = map[bool]string{true: "the frame view has the screen: the needle keys still move it, + gives the timelines back", false: ""}[d.zoom]
	case key.Matches(msg, k.Fork):
		return d.openForm(), true
	case key.Matches(msg, k.Diff):
		return d.toggleDiff(), true
	case key.Matches(msg, k.Forks):
		return d.openForks(), true
	case key.Matches(msg, k.Files):
		return d.openFiles(), true
	case key.Matches(msg, k.Check):
		return d.checkNow(), true
	default:
		return nil, false
	}
	return nil, true
}

// trackKey handles a key for the focused timeline: the deck's own keys
// (prompts, playback) first, then the timeline's.
func (d *Deck) trackKey(msg tea.KeyMsg) tea.Cmd {
	tv := d.tracks[d.focus]
	k := tv.keys
	switch {
	case key.Matches(msg, k.Goto):
		d.openPrompt(promptGoto)
	case key.Matches(msg, k.Read):
		d.pane = paneFrame // esc comes back
	case key.Matches(msg, k.Scale):
		d.scrub.scale = (d.scrub.scale + 1) % scale(len(scaleNames))
		d.status = "the scrubber is laid out by " + scaleNames[d.scrub.scale]
	case key.Matches(msg, k.Search):
		d.openPrompt(promptSearch)
	case key.Matches(msg, k.Note):
		d.openPrompt(promptNote)
	case key.Matches(msg, k.Pager):
		return d.pageFrame()
	case key.Matches(msg, k.Editor):
		return d.editFrame()
	case key.Matches(msg, k.Copy):
		d.copyFrame()
	case key.Matches(msg, k.Curl):
		d.copyCurl()
	case key.Matches(msg, k.Write):
		d.openPrompt(promptWrite)
	case key.Matches(msg, k.Command):
		d.openPrompt(promptCommand)
	case key.Matches(msg, k.Markers):
		d.openMarkers()
	case key.Matches(msg, k.Table):
		return d.openTable()
	case key.Matches(msg, k.Grep):
		d.openPrompt(promptFilter)
	case key.Matches(msg, k.SearchNext):
		return d.nextMatch(1)
	case key.Matches(msg, k.SearchPrev):
		return d.nextMatch(-1)
	case key.Matches(msg, k.Play):
		return d.togglePlay()
	case key.Matches(msg, k.Speed):
		d.cycleSpeed()
	case key.Matches(msg, k.Idle):
		d.toggleIdle()
	default:
		d.status = ""
		cmd := tv.update(msg)
		if d.play.playing {
			d.play.anchor(d.o.Now(), d.tracks[d.focus])
		}
		return cmd
	}
	return nil
}

// cycleFocus moves the keyboard: each timeline, then the frame view.
func (d *Deck) cycleFocus() {
	switch {
	case d.pane == paneFrame:
		d.pane, d.focus = paneTracks, 0
	case d.focus+1 < len(d.tracks):
		d.focus++
	default:
		d.pane = paneFrame
	}
	d.scrub.tv = d.tracks[d.focus]
}

// sync brings everything that depends on the needle up to date: the frame
// view, the scrubber and which keys are enabled.
func (d *Deck) sync() {
	if d.openErr != nil || len(d.tracks) == 0 {
		return
	}
	for i, t := range d.tracks {
		t.focused = d.pane == paneTracks && i == d.focus
	}
	d.frame.focused = d.pane == paneFrame
	tv := d.tracks[d.focus]
	d.scrub.tv, d.scrub.playing, d.scrub.speed, d.scrub.reached = tv, d.play.playing, d.play.speed, d.play.reached
	seq, stream := d.play.showing(tv)
	d.frame.Show(tv.tl, seq, stream)
	d.frame.SetLive(d.liveCall(tv))
	d.syncKeys(tv)
}

// liveCall is a fork's call in flight, streamed so far, when the needle
// is where the fork runs: the parent's fork point, or the end of the
// fork's own timeline; and an id of that version of it.
func (d *Deck) liveCall(tv *timelineView) (string, string) {
	r := d.run
	if r == nil || !r.running() {
		return "", ""
	}
	fork := len(d.tracks) == 2 && tv == d.tracks[1]
	if !(tv == d.tracks[0] && tv.cursor == r.at) && !(fork && tv.cursor >= tv.tl.Len()-1) {
		return "", ""
	}
	text := r.live()
	return text, fmt.Sprintf("%d/%d", r.calls, len(text))
}

// forkShown reports whether the second timeline is a fork of the first
// (run this session or chosen from the list), not a tape given to compare.
func (d *Deck) forkShown() bool { return len(d.tracks) == 2 && d.tracks[1].label == "fork" }

// syncKeys enables exactly the keys that would do something now.
func (d *Deck) syncKeys(tv *timelineView) {
	_, canFork := d.forkPoint(tv)
	forking := d.run != nil && d.run.running()
	// Forks start from the parent, or from a fork on screen beside it; a
	// new fork replaces the fork shown (it stays in the list, b).
	fromHere := len(d.tracks) == 1 || d.forkShown()
	other := d.pane != paneDiff && d.pane != paneForks && d.pane != paneFiles && d.pane != paneMarkers && d.pane != paneTable // a pane that has the screen
	d.keys.Fork.SetEnabled(canFork && !forking && fromHere && other)
	d.keys.Diff.SetEnabled(len(d.tracks) == 2 && !forking && other)
	d.keys.Raw.SetEnabled(other)
	d.keys.Focus.SetEnabled(other)
	d.keys.Forks.SetEnabled(len(d.family) > 0 && d.pane != paneDiff && d.pane != paneFiles)
	d.keys.Files.SetEnabled(other)
	d.keys.Check.SetEnabled(d.checks[tv.tl] == nil && !tv.growing() && d.pane != paneDiff && d.pane != paneFiles)
	d.fkeys.Cancel.SetEnabled(forking)
	d.diff.syncKeys()
	for _, t := range d.tracks {
		k := &t.keys
		k.SearchNext.SetEnabled(d.lastQuery != "")
		k.SearchPrev.SetEnabled(d.lastQuery != "")
		k.NextMark.SetEnabled(len(t.markers) > 0)
		// Keys that would not move the needle from where it is are off,
		// so the help line never lists them (h at frame 0, l at the end).
		row, last := t.rowOf(t.cursor), t.n()-1
		for _, b := range []*key.Binding{&k.Prev, &k.Up, &k.Home, &k.PageUp} {
			b.SetEnabled(row > 0 || t.entry(row).First < t.cursor)
		}
		for _, b := range []*key.Binding{&k.Next, &k.Down, &k.End, &k.PageDown} {
			b.SetEnabled(row < last)
		}
		k.PrevStep.SetEnabled(t.tl.Steps() > 0 && t.cursor > 0)
		k.NextStep.SetEnabled(t.tl.Steps() > 0 && t.tl.StepStart(t.tl.StepOf(t.cursor)+1) < t.tl.Len())
		k.Speed.SetEnabled(d.play.playing)
		if d.play.playing {
			k.Play.SetHelp("space", "pause")
		} else {
			k.Play.SetHelp("space", "play")
		}
	}
}

// forkPoint is where a fork from the needle would happen: the first LLM
// request at or after it.
func (d *Deck) forkPoint(tv *timelineView) (int, bool) {
	if tv.tl.Len() == 0 {
		return 0, false
	}
	if k, _ := tv.tl.KindAt(tv.cursor); k == timeline.KindLLMRequest {
		return tv.cursor, true
	}
	return tv.tl.Next(tv.cursor, timeline.FindLLM, 1)
}

// recoveryWarning says what opening torn tapes dropped.
func recoveryWarning(tracks []*timelineView) string {
	for _, t := range tracks {
		if r := t.tl.Recovered(); r != nil && !t.growing() {
			return fmt.Sprintf("⚠ torn tape %s: kept %s, dropped %s (%d bytes) after the last whole step",
				baseName(t.tl.Path()), counted(int64(r.FramesKept), "frame", "frames"), counted(int64(r.FramesDropped), "frame", "frames"), r.BytesDropped())
		}
	}
	return ""
}

// deckKeys work everywhere on the deck (not in the form or a prompt).
type deckKeys struct {
	Quit, Help, Fork, Diff, Focus, Raw, Forks, Check, Files, Zoom key.Binding
}

func newDeckKeys() deckKeys {
	return deckKeys{
		Quit:  key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:  key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "keys")),
		Fork:  key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "fork here")),
		Diff:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diff")),
		Focus: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		Raw:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "raw bytes")),
		Forks: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "forks")),
		Check: key.NewBinding(key.WithKeys("C"), key.WithHelp("C", "check a store's tape whole")),
		Files: key.NewBinding(key.WithKeys("W"), key.WithHelp("W", "workspace files here")),
		Zoom:  key.NewBinding(key.WithKeys("+"), key.WithHelp("+", "frame view on the whole screen")),
	}
}

// forkKeys work while a fork runs.
type forkKeys struct{ Cancel key.Binding }

func newForkKeys() forkKeys {
	return forkKeys{Cancel: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "stop fork"))}
}

// Err is why a tape did not open, or nil.
func (d *Deck) Err() error { return d.openErr }

// openTable shows the focused timeline's step table.
func (d *Deck) openTable() tea.Cmd {
	d.pane = paneTable
	d.play.playing = false
	return d.table.load(d.tracks[d.focus])
}

// openMarkers lists the focused timeline's markers.
func (d *Deck) openMarkers() {
	d.marks.open(d.tracks[d.focus])
	d.pane = paneMarkers
	d.play.playing = false
}

// openFiles shows the booth's workspace at the needle of the focused
// timeline: read in a tea.Cmd, it comes back as a filesReadyMsg.
func (d *Deck) openFiles() tea.Cmd {
	tv := d.tracks[d.focus]
	tl, at := tv.tl, tv.cursor
	d.pane, d.files.loading, d.files.err = paneFiles, true, nil
	d.play.playing = false
	release := tl.Hold() // read in the background: see Timeline.Hold
	return func() tea.Msg {
		defer release()
		return workspaceText(tl, at)
	}
}
