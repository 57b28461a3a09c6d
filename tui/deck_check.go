package tui

// The background check of each tape opened from a file (Timeline.Check):
// started by Init, shown in the header, its damaged frames marked in the
// timeline and found by e / E.

import (
	"context"
	"errors"
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// tapeCheck is where the check of one tape stands.
type tapeCheck struct {
	running bool
	result  *timeline.TapeCheck
	err     error // the check itself failed (not the tape)
}

// checkDoneMsg carries a check's result back.
type checkDoneMsg struct {
	tl     *timeline.Timeline
	result *timeline.TapeCheck
	err    error
}

// startChecks starts checking every tape opened from a file (not a fork's
// tape, which is still being written): one command each.
func (d *Deck) startChecks() []tea.Cmd {
	if d.checks == nil {
		d.checks = map[*timeline.Timeline]*tapeCheck{}
	}
	var cmds []tea.Cmd
	for _, t := range d.tracks {
		if t.growing() || d.checks[t.tl] != nil || t.tl.Remote() {
			continue // a store's tape would be fetched whole: jukebox verify URL checks it
		}
		d.checks[t.tl] = &tapeCheck{running: true}
		tl, ctx, key := t.tl, d.ctx, d.o.Key
		cmds = append(cmds, func() tea.Msg {
			c, err := tl.Check(ctx, key)
			return checkDoneMsg{tl: tl, result: c, err: err}
		})
	}
	return cmds
}

// checkNow starts the whole check of the focused tape where none ran on
// open (a store's tape: all of it is fetched).
func (d *Deck) checkNow() tea.Cmd {
	tv := d.tracks[d.focus]
	if tv.growing() || d.checks[tv.tl] != nil {
		d.status = "this tape is checked already (the header says how it went)"
		return nil
	}
	if d.checks == nil {
		d.checks = map[*timeline.Timeline]*tapeCheck{}
	}
	d.checks[tv.tl] = &tapeCheck{running: true}
	d.status = "checking " + baseName(tv.tl.Path()) + " whole: all of it is fetched"
	tl, ctx, key := tv.tl, d.ctx, d.o.Key
	release := tl.Hold() // read in the background: see Timeline.Hold
	return func() tea.Msg {
		defer release()
		c, err := tl.Check(ctx, key)
		return checkDoneMsg{tl: tl, result: c, err: err}
	}
}

// checkDone records a check's result and warns about what it found.
func (d *Deck) checkDone(msg checkDoneMsg) {
	c := d.checks[msg.tl]
	if c == nil || errors.Is(msg.err, context.Canceled) {
		return
	}
	c.running, c.result, c.err = false, msg.result, msg.err
	if w := checkWarning(baseName(msg.tl.Path()), c); w != "" && d.warn == "" {
		d.warn = w
	}
}

// checkWarning is the status line's word on a check that found a problem
// the header can only name.
func checkWarning(name string, c *tapeCheck) string {
	r := c.result
	switch {
	case c.err != nil:
		return fmt.Sprintf("⚠ %s: the check did not run: %v", name, c.err)
	case r.State == timeline.TapeDamaged && len(r.Damage) > 0:
		more := ""
		switch n := len(r.Damage) - 1; {
		case n == 1:
			more = " (and 1 more frame)"
		case n > 1:
			more = fmt.Sprintf(" (and %d more frames)", n)
		}
		return fmt.Sprintf("⚠ %s: %s%s · e jumps to it", name, timeline.OneLine(r.Damage[0].Error(), 0), more)
	case r.State == timeline.TapeDamaged:
		return fmt.Sprintf("⚠ %s: %s", name, timeline.OneLine(r.Err.Error(), 0))
	case r.State == timeline.TapeSealBad && timeline.NotSealed(r.Err):
		return fmt.Sprintf("⚠ %s is not sealed", name)
	case r.State == timeline.TapeSealBad:
		return fmt.Sprintf("⚠ %s: the seal does not match the key: the tape was changed after it was sealed, or another key sealed it", name)
	}
	return ""
}

// checkText is the header's word on a tape's check, and whether it is bad
// news; "" before the check starts.
func (d *Deck) checkText(tl *timeline.Timeline) (string, bool) {
	c := d.checks[tl]
	for _, t := range d.tracks {
		if t.tl == tl && t.recording {
			return "● recording", false
		}
	}
	switch {
	case c == nil && d.o.Verified != nil && tl.Remote():
		return d.o.Verified(tl.Path())
	case c == nil:
		return "", false
	case c.running:
		return "checking…", false
	case c.err != nil:
		return "not checked", true
	}
	r := c.result
	switch r.State {
	case timeline.TapeChainOK:
		return "chain ok", false
	case timeline.TapeSealed:
		return "sealed (not checked)", false
	case timeline.TapeSealOK:
		return "seal ✓", false
	case timeline.TapeSealBad:
		return "⚠ seal ✗", true
	case timeline.TapeTorn:
		return "⚠ torn", true
	}
	if i := r.FirstDamaged(); i >= 0 {
		return fmt.Sprintf("⚠ damaged at frame %d", i), true
	}
	if dm, ok := timeline.DamageOf(r.Err); ok {
		return fmt.Sprintf("⚠ damaged at offset %d", dm.Offset), true
	}
	return "⚠ damaged", true
}
