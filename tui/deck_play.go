package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// togglePlay starts or pauses playback of the focused timeline, from
// the start when the needle is on the last frame.
func (d *Deck) togglePlay() tea.Cmd {
	p, tv := &d.play, d.tracks[d.focus]
	p.playing = !p.playing
	p.gen++
	if !p.playing {
		return nil
	}
	p.skipped = 0
	if tv.cursor >= tv.tl.Len()-1 {
		tv.SetCursor(0)
	}
	p.anchor(d.o.Now(), tv)
	return p.tick()
}

// toggleIdle switches between skipping idle time and playing it.
func (d *Deck) toggleIdle() {
	p := &d.play
	p.rebase(d.o.Now())
	p.keepIdle = !p.keepIdle
	if p.keepIdle {
		d.status = "idle time plays as recorded"
	} else {
		d.status = fmt.Sprintf("idle time skipped: a stretch with nothing happening lasts %s on screen", idleCap)
	}
	if !p.playing {
		p.anchor(d.o.Now(), d.tracks[d.focus])
	}
}

// cycleSpeed moves to the next playback speed (1x, 2x, 8x).
func (d *Deck) cycleSpeed() {
	p := &d.play
	p.rebase(d.o.Now())
	for i, s := range speeds {
		if s == p.speed {
			p.speed = speeds[(i+1)%len(speeds)]
			break
		}
	}
	if !p.playing {
		p.anchor(d.o.Now(), d.tracks[d.focus])
	}
}

// tick moves the needle to the frame the playback has reached.
func (d *Deck) tick(msg tickMsg) tea.Cmd {
	p, tv := &d.play, d.tracks[d.focus]
	if !p.playing || msg.gen != p.gen {
		return nil
	}
	now := d.o.Now()
	p.reached = p.at(now)
	if p.skipIdle(now, tv) {
		d.status = fmt.Sprintf("skipped %s of idle time (i plays it as recorded)", p.skipped.Round(10*time.Millisecond))
	}
	if i := tv.tl.FrameAt(p.reached); i > tv.cursor {
		tv.SetCursor(i)
	}
	if tv.cursor >= tv.tl.Len()-1 {
		p.playing = false
		d.status = "played to the end"
		return nil
	}
	return p.tick()
}
