package tui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/llmwire"
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
	estimated bool // a call's usage was counted, not reported: "~"
	last      string
	finished  bool
	res       *engine.Result
	err       error
	reloading bool
	dirty     bool

	// The call in flight, as it streams (engine.EventChunk): written by
	// the engine's goroutine, read by the program's.
	mu       sync.Mutex
	inflight []byte    // its answer so far, as relayed
	notified time.Time // when the program was last told of new bytes
}

// forkStreamMsg says the call in flight has new bytes.
type forkStreamMsg struct{}

// maxInflight bounds what is kept of a call in flight (the tape keeps it
// all): past it the live view stops growing until the answer is whole.
const maxInflight = 1 << 20

// streamed takes a piece of the call in flight; it reports whether the
// program should be told now (at most every 50 ms: a fast stream must not
// wait on the screen).
func (r *forkRun) streamed(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.inflight)+len(b) <= maxInflight {
		r.inflight = append(r.inflight, b...)
	}
	if now := time.Now(); now.Sub(r.notified) >= 50*time.Millisecond {
		r.notified = now
		return true
	}
	return false
}

// live is the call in flight's text so far, "" when none streams.
func (r *forkRun) live() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || len(r.inflight) == 0 {
		return ""
	}
	return llmwire.ResponseText(r.inflight)
}

// forkEventMsg is an engine event of the running fork.
type forkEventMsg struct{ ev engine.Event }

// forkTapeMsg names the tape run's fork writes, once the engine made it.
type forkTapeMsg struct {
	run  *forkRun
	path string
}

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
	approx := ""
	if r.estimated {
		approx = "~"
	}
	cost := approx + timeline.USD(r.cost)
	if r.unpriced {
		cost += "+?"
	}
	info := fmt.Sprintf("fork at %d · %s · %s · %s ", r.at, counted(int64(r.calls), "call", "calls"), approx+count(r.tokens)+" tok", cost)
	// Once the fork has ended, the status line says how; this side keeps
	// its figures alone, so nothing is said twice on one line.
	switch {
	case !r.finished:
		last := r.last
		if text := r.live(); text != "" { // the call in flight, its latest words
			t := []rune(timeline.OneLine(text, 0))
			last = "← …" + string(t[max(len(t)-40, 0):])
		}
		return st.Fork.Render(r.spin.View()+" forking "+info) + st.Muted.Render(last+" ")
	case r.err != nil:
		return st.Error.Render("✗ " + info)
	case r.res != nil && r.res.Divergence != nil:
		return st.Warn.Render("⚠ " + info)
	}
	return st.Fork.Render("⑂ " + info)
}

func (r *forkRun) event(ev engine.Event) {
	switch ev.Kind {
	case engine.EventRequest:
		r.calls++
		r.last = "→ " + ev.Model
		r.mu.Lock()
		r.inflight = nil
		r.mu.Unlock()
	case engine.EventResponse:
		r.mu.Lock()
		r.inflight = nil // whole now: the timeline shows it once its step ends
		r.mu.Unlock()
		// The engine found the call's usage, model and cost (llmwire.ResponseUsage).
		r.tokens += ev.Usage.Total()
		r.cost += ev.Cost
		r.unpriced = r.unpriced || ev.Unpriced()
		r.estimated = r.estimated || ev.Estimated
		r.last = fmt.Sprintf("← %s%s tok", ev.Mark(), count(ev.Usage.Total()))
	case engine.EventOutput:
		r.last = "› " + timeline.OneLine(string(ev.Data), 0)
	case engine.EventDiverged:
		r.last = "diverged"
	case engine.EventExit:
		r.last = "exited"
	}
	r.dirty = true
}

// forkState is how the fork ended, in short, for the fork list.
func forkState(r *forkRun) string {
	switch {
	case r.err != nil:
		return "failed"
	case r.res == nil:
		return "ended"
	case r.res.Divergence != nil:
		return "diverged before its frame"
	}
	return engine.EndText(r.res.End)
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
	live := ""
	if n := r.res.LiveFailed; n > 0 {
		// The upstream that was not there (the demo's model gone, a
		// public API offline) is why such a fork's agent failed.
		live = fmt.Sprintf(" (%s never reached the upstream: %s)", counted(int64(n), "call", "calls"), timeline.OneLine(r.res.LiveError, 0))
	}
	return fmt.Sprintf("fork done: %s, %s%s, %s · d diffs it with the parent", engine.EndText(r.res.End), counted(int64(r.res.Calls), "call", "calls"), live, counted(int64(r.res.Frames), "frame", "frames"))
}
