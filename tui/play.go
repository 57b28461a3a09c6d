package tui

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// frameInterval is how often playback moves the needle: 30 times a second.
const frameInterval = time.Second / 30

// speeds are the playback speeds `x` cycles through.
var speeds = []int{1, 2, 8}

// player plays a timeline at real speed (or 2x, 8x): the needle goes to
// the last frame recorded by now, measured from when play was pressed.
type player struct {
	playing   bool
	speed     int
	wallStart time.Time
	tapeStart time.Duration
	reached   time.Duration // tape time at the last tick
	gen       int           // ticks of an older play are ignored
	// keepIdle plays stretches where nothing happens at their recorded
	// length; by default each lasts at most idleCap on screen (skipped
	// counts the tape time jumped over in this play).
	keepIdle bool
	skipped  time.Duration
}

// idleCap is how long a stretch with nothing happening (no frame, no
// streamed chunk) lasts on screen while idle time is skipped: then
// playback jumps to the next thing that happens.
const idleCap = 400 * time.Millisecond

// events are the tape times of the last thing that happened at or before
// reached and of the next one after it (ok false when nothing follows):
// frames, and the chunks of the call being played.
func (p *player) events(tv *timelineView) (last, next time.Duration, ok bool) {
	i := tv.tl.FrameAt(p.reached)
	_, last = tv.tl.KindAt(i)
	if i+1 < tv.tl.Len() {
		_, next = tv.tl.KindAt(i + 1)
		ok = true
	}
	if req, elapsed := p.showing(tv); elapsed != nil {
		if d, err := tv.tl.Detail(req); err == nil && d.Call != nil {
			t0 := p.reached - *elapsed
			for _, ch := range d.Call.Chunks {
				at := t0 + time.Duration(ch.At)
				if at <= p.reached {
					last = max(last, at)
				} else {
					if !ok || at < next {
						next, ok = at, true
					}
					break
				}
			}
		}
	}
	return last, next, ok
}

// skipIdle jumps over a stretch where nothing happens once it has been on
// screen for idleCap; it reports whether it jumped.
func (p *player) skipIdle(now time.Time, tv *timelineView) bool {
	if p.keepIdle {
		return false
	}
	last, next, ok := p.events(tv)
	if !ok || next <= p.reached || (p.reached-last)/time.Duration(p.speed) <= idleCap {
		return false
	}
	p.skipped += next - p.reached
	p.tapeStart, p.wallStart, p.reached = next, now, next
	return true
}

// tickMsg moves the needle during playback.
type tickMsg struct{ gen int }

// anchor restarts the clock from the needle.
func (p *player) anchor(now time.Time, tv *timelineView) {
	_, p.tapeStart = tv.tl.KindAt(tv.cursor)
	p.wallStart, p.reached = now, p.tapeStart
}

// rebase restarts the clock from where playback has reached, before its
// speed or idle rule changes: anchored at the needle's frame instead, the
// clock went back to that frame's time (a long streamed call restarted).
func (p *player) rebase(now time.Time) {
	if p.playing {
		p.reached = p.at(now)
		p.tapeStart, p.wallStart = p.reached, now
	}
}

// at is the tape time playback has reached.
func (p *player) at(now time.Time) time.Duration {
	return p.tapeStart + now.Sub(p.wallStart)*time.Duration(p.speed)
}

// tick is the next playback tick of this generation (a pause or a new
// start makes older ticks stale).
func (p *player) tick() tea.Cmd {
	gen := p.gen
	return tea.Tick(frameInterval, func(time.Time) tea.Msg { return tickMsg{gen} })
}

// showing is the frame the frame view should show, and how far into its
// stream: while playing through an LLM call (between its request and its
// response) that is the call, its answer as far as it had arrived.
func (p *player) showing(tv *timelineView) (int, *time.Duration) {
	if !p.playing || tv.tl.Len() == 0 {
		return tv.cursor, nil
	}
	req := tv.cursor
	if k, _ := tv.tl.KindAt(req); k != timeline.KindLLMRequest {
		var ok bool
		if req, ok = tv.tl.Next(tv.cursor+1, timeline.FindLLM, -1); !ok {
			return tv.cursor, nil
		}
	}
	d, err := tv.tl.Detail(req)
	if err != nil || d.Call == nil || d.Call.Response < tv.cursor {
		return tv.cursor, nil
	}
	_, t0 := tv.tl.KindAt(req)
	elapsed := p.reached - t0
	return req, &elapsed
}
