package tui

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/timeline"
)

// forkRun is a fork in progress (or finished): the engine runs it in a
// command, its events come back through program.Send, and the fork's tape
// is re-opened as it grows into the second timeline.
type forkRun struct {
	st        *Styles
	spin      spinner.Model
	cancelFn  context.CancelFunc
	done      chan struct{}
	tape      string
	at        int
	calls     int
	tokens    int64
	cost      float64
	unpriced  bool // a call had no known price: cost is a lower bound
	last      string
	finished  bool
	res       *engine.Result
	err       error
	reloading bool
	dirty     bool
}

// forkEventMsg is an engine event of the running fork.
type forkEventMsg struct{ ev engine.Event }

// forkDoneMsg says the fork has ended.
type forkDoneMsg struct {
	res *engine.Result
	err error
}

// forkReloadMsg brings the fork's tape, re-opened.
type forkReloadMsg struct {
	tl  *timeline.Timeline
	err error
}

func (r *forkRun) running() bool { return !r.finished }

func (r *forkRun) cancel() { r.cancelFn() }

// stopAndWait cancels the fork and waits until its tape is closed.
func (r *forkRun) stopAndWait() {
	r.cancelFn()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
	}
}

func (r *forkRun) update(msg tea.Msg) tea.Cmd {
	if _, ok := msg.(spinner.TickMsg); !ok || r.finished {
		return nil
	}
	var cmd tea.Cmd
	r.spin, cmd = r.spin.Update(msg)
	return cmd
}

// View is the fork's progress for the status line.
func (r *forkRun) View() string {
	st := r.st
	cost := timeline.USD(r.cost)
	if r.unpriced {
		cost += "+?"
	}
	info := fmt.Sprintf("fork at %d · %s · %s · %s ", r.at, counted(int64(r.calls), "call", "calls"), count(r.tokens)+" tok", cost)
	// Once the fork has ended, the status line says how; this side keeps
	// its figures alone, so nothing is said twice on one line.
	switch {
	case !r.finished:
		return st.Fork.Render(r.spin.View()+" forking "+info) + st.Muted.Render(r.last+" ")
	case r.err != nil:
		return st.Error.Render("✗ " + info)
	case r.res != nil && r.res.Divergence != nil:
		return st.Warn.Render("⚠ " + info)
	}
	return st.Fork.Render("⑂ " + info)
}

// openForm opens the fork form for the call at or after the needle.
func (d *Deck) openForm() {
	tv := d.tracks[d.focus]
	at, ok := d.forkPoint(tv)
	if !ok {
		return
	}
	var call *timeline.CallDetail
	det, err := tv.tl.Detail(at)
	if err == nil {
		call = det.Call
	}
	d.form = newForkForm(d.st, at, call)
	d.form.unreadable(err)
	d.form.SetSize(d.w, max(d.h-chromeRows, 3))
	d.pane = paneForm
	d.play.playing = false
}

func (d *Deck) formKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, d.form.keys.Cancel):
		d.pane = paneTracks
		return nil
	case key.Matches(msg, d.form.keys.Submit):
		over, err := d.form.Overrides()
		if err != nil {
			d.form.err = err.Error()
			return nil
		}
		return d.startFork(over)
	}
	d.form, _ = d.form.update(msg)
	return nil
}

// startFork runs engine.Fork in a command; events come back as messages.
func (d *Deck) startFork(over engine.Overrides) tea.Cmd {
	parent := d.tracks[0]
	fo := engine.ForkOptions{
		RunOptions: engine.RunOptions{Stdout: io.Discard, Stderr: io.Discard,
			OnEvent: func(ev engine.Event) { d.send.Send(forkEventMsg{ev}) }},
		Parent: parent.tl.Path(), Frame: uint64(d.form.at), Overrides: over, Upstreams: d.o.Upstreams,
	}
	if d.o.PrepareFork != nil {
		if err := d.o.PrepareFork(&fo); err != nil {
			d.form.err = err.Error()
			return nil
		}
	}
	if fo.Tape == "" {
		fo.Tape = defaultForkTape(fo.Parent, d.o.Now())
	}
	run := d.o.Fork
	if run == nil {
		run = engine.Fork
	}
	ctx, cancel := context.WithCancel(d.ctx)
	r := &forkRun{st: d.st, spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(d.st.Fork)),
		cancelFn: cancel, done: make(chan struct{}), tape: fo.Tape, at: d.form.at}
	if len(d.tracks) == 2 {
		d.tracks[1].tl.Close()
		d.tracks = d.tracks[:1]
	}
	d.run, d.pane, d.focus = r, paneTracks, 0
	parent.forkAt, parent.label = r.at, "parent"
	d.status = "forking to " + baseName(fo.Tape)
	d.layout()
	return tea.Batch(r.spin.Tick, func() tea.Msg {
		defer close(r.done)
		res, err := run(ctx, fo)
		return forkDoneMsg{res, err}
	})
}

// defaultForkTape names the fork's tape after its parent, beside it.
func defaultForkTape(parent string, now time.Time) string {
	base := strings.TrimSuffix(parent, filepath.Ext(parent))
	return fmt.Sprintf("%s-fork-%s.jbx", base, now.Format("20060102-150405.000"))
}

// forkMsg follows the fork: counts its calls and cost, re-opens its tape.
func (d *Deck) forkMsg(msg tea.Msg) tea.Cmd {
	r := d.run
	if r == nil {
		return nil
	}
	switch msg := msg.(type) {
	case forkEventMsg:
		r.event(msg.ev)
		return d.reloadFork()
	case forkDoneMsg:
		r.finished, r.res, r.err = true, msg.res, msg.err
		d.status = forkOutcome(r)
		r.dirty = true
		return d.reloadFork()
	case forkReloadMsg:
		r.reloading = false
		d.forkReloaded(msg)
		if r.dirty {
			return d.reloadFork()
		}
	}
	return nil
}

func (r *forkRun) event(ev engine.Event) {
	switch ev.Kind {
	case engine.EventRequest:
		r.calls++
		r.last = "→ " + ev.Model
	case engine.EventResponse:
		// The engine found the call's usage, model and cost (llmwire.ResponseUsage).
		r.tokens += ev.Usage.Total()
		r.cost += ev.Cost
		r.unpriced = r.unpriced || ev.Unpriced()
		r.last = fmt.Sprintf("← %s tok", count(ev.Usage.Total()))
	case engine.EventOutput:
		r.last = "› " + timeline.OneLine(string(ev.Data), 0)
	case engine.EventDiverged:
		r.last = "diverged"
	case engine.EventExit:
		r.last = "exited"
	}
	r.dirty = true
}

func forkOutcome(r *forkRun) string {
	switch {
	case r.err != nil:
		return "fork failed: " + r.err.Error()
	case r.res == nil:
		return "fork ended"
	case r.res.Divergence != nil:
		return "the fork diverged before its frame: " + timeline.OneLine(r.res.Divergence.Error(), 0)
	}
	return fmt.Sprintf("fork done: exit %d, %s, %s · d diffs it with the parent", r.res.End.ExitCode, counted(int64(r.res.Calls), "call", "calls"), counted(int64(r.res.Frames), "frame", "frames"))
}

// reloadFork re-opens the fork's tape in a command, one reload at a time.
func (d *Deck) reloadFork() tea.Cmd {
	r := d.run
	if r.reloading || !r.dirty {
		return nil
	}
	r.reloading, r.dirty = true, false
	path := r.tape
	return func() tea.Msg {
		tl, err := timeline.Open(path)
		if err == nil {
			tl.IndexCosts(context.Background())
		}
		return forkReloadMsg{tl, err}
	}
}

func (d *Deck) forkReloaded(msg forkReloadMsg) {
	if msg.err != nil {
		return // the tape has no whole step yet; the next event tries again
	}
	var tv *timelineView
	if len(d.tracks) == 2 {
		tv = d.tracks[1]
		old := tv.tl
		tv.tl = msg.tl
		old.Close()
		if tv.follow {
			tv.SetCursor(msg.tl.Len() - 1)
		}
	} else {
		tv = newTimelineView(msg.tl, d.st, "fork")
		d.tracks = append(d.tracks, tv)
		d.layout()
		tv.SetCursor(msg.tl.Len() - 1)
	}
	tv.live = d.run.running()
	tv.scroll()
}
