package tui

import (
	"slices"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/timeline"
)

// toggleDiff opens the diff of the two timelines (or closes it).
func (d *Deck) toggleDiff() tea.Cmd {
	if d.pane == paneDiff {
		d.pane = paneTracks
		return nil
	}
	if len(d.tracks) != 2 {
		return nil
	}
	d.pane, d.diff.loading, d.diff.err = paneDiff, true, nil
	d.play.playing = false
	left, right := d.tracks[0].tl, d.tracks[1].tl
	// Read in the background: a fork's track may let its timeline go
	// meanwhile (reloaded as the fork runs or ends), which must not close
	// it under the comparison.
	releaseLeft, releaseRight := left.Hold(), right.Hold()
	return func() tea.Msg {
		defer releaseLeft()
		defer releaseRight()
		a, err := timeline.ForDiff(left.Tape(), baseName(left.Path()))
		if err != nil {
			return diffReadyMsg{err: err}
		}
		b, err := timeline.ForDiff(right.Tape(), baseName(right.Path()))
		if err != nil {
			return diffReadyMsg{err: err}
		}
		return diffReadyMsg{res: diffview.Compare(a, b)}
	}
}

// diffReady shows the comparison and puts each timeline's needle on its
// side of the first divergence.
func (d *Deck) diffReady(msg diffReadyMsg) {
	d.diff.loading, d.diff.res, d.diff.err = false, msg.res, msg.err
	d.diff.render()
	if msg.res == nil || len(d.tracks) != 2 {
		return
	}
	if dv, ok := msg.res.Divergence(); ok {
		for i, seq := range []int{dv.Left, dv.Right} {
			d.tracks[i].diverge = seq
			if seq >= 0 {
				d.tracks[i].SetCursor(seq)
			}
		}
	}
}

// diffKey handles a key in the diff pane.
func (d *Deck) diffKey(msg tea.KeyMsg) tea.Cmd {
	k := d.diff.keys
	for _, c := range []struct {
		b     key.Binding
		where string
	}{{k.Up, "top"}, {k.PageUp, "top"}, {k.Top, "top"}, {k.Down, "bottom"}, {k.PageDown, "bottom"}, {k.Bottom, "bottom"},
		{k.PrevChange, "first change"}, {k.NextChange, "last change"}} {
		if !c.b.Enabled() && slices.Contains(c.b.Keys(), msg.String()) {
			d.status = "the diff is at its " + c.where
			return nil
		}
	}
	if d.diff.update(msg) == dismissed {
		d.pane = paneTracks
	}
	return nil
}
