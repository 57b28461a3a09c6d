package tui

import (
	"os"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// followEvery is how often the turntable looks whether a tape being
// recorded has grown.
const followEvery = 250 * time.Millisecond

// followTickMsg asks to look whether a recording tape has grown.
type followTickMsg struct{ tv *timelineView }

// followMsg brings a recording tape, re-opened when it grew.
type followMsg struct {
	tv        *timelineView
	tl        *timeline.Timeline // nil when it did not grow
	size      int64
	recording bool
}

// followLater looks again in a moment.
func followLater(tv *timelineView) tea.Cmd {
	return tea.Tick(followEvery, func(time.Time) tea.Msg { return followTickMsg{tv} })
}

// followLook re-opens the tape when its file grew or its writer ended, in
// a command: a recording tape opens by a recovery scan.
func (d *Deck) followLook(tv *timelineView) tea.Cmd {
	if (d.sweeping != nil && d.sweeping.track == tv) || tv.projecting != nil {
		return followLater(tv) // a search or a filter reads this timeline: it grows after them
	}
	path, size, ctx := tv.tl.Path(), tv.size, d.ctx
	return func() tea.Msg {
		recording := tv.tl.Recording()
		fi, err := os.Stat(path)
		if err != nil || (fi.Size() == size && recording) {
			return followMsg{tv: tv, size: size, recording: recording}
		}
		tl, err := timeline.Open(path)
		if err != nil {
			return followMsg{tv: tv, size: size, recording: recording}
		}
		tl.IndexCosts(ctx)
		return followMsg{tv: tv, tl: tl, size: fi.Size(), recording: recording && tl.Recording()}
	}
}

// followed shows a recording tape as it grew: the needle stays on the
// newest frame when it was there. When the writer ends, the tape is
// checked as any other.
func (d *Deck) followed(msg followMsg) tea.Cmd {
	tv := msg.tv
	if d.ctx.Err() != nil {
		if msg.tl != nil {
			msg.tl.Close()
		}
		return nil
	}
	if msg.tl != nil {
		old, follow := tv.tl, tv.follow
		tv.setTimeline(msg.tl)
		tv.size = msg.size
		old.Close()
		if follow {
			tv.SetCursor(msg.tl.Len() - 1)
		}
		tv.scroll()
	}
	if msg.recording {
		return followLater(tv)
	}
	tv.live, tv.recording = false, false
	d.warn = recoveryWarning(d.tracks)
	d.status = "the recording ended"
	return tea.Batch(d.startChecks()...)
}
