package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/timeline"

	"github.com/charmbracelet/bubbles/key"
)

// scrubber is the bar across the whole run: the needle where the focused
// timeline's cursor is, ticks at step boundaries, markers, the fork point
// and the first divergence; and under it the step, time and cost so far.
// Positions are by time (long thinking shows as long stretches), by frame
// or by step (each step the same width), as scale says (s cycles them).
type scrubber struct {
	st      *Styles
	tv      *timelineView
	w       int
	playing bool
	speed   int
	scale   scale
	reached time.Duration // while playing: the tape time playback has reached
}

// needle is the bar cell of the needle: the cursor's frame, or, while
// playing by time, the time playback has reached, so that the needle
// moves through a long streamed call (its frames are its request and its
// response) as the stream plays.
func (m *scrubber) needle() int {
	at := m.pos(m.tv.cursor)
	tl := m.tv.tl
	if !m.playing || m.scale != byTime || tl.Duration() <= 0 {
		return at
	}
	w := m.barWidth() - 1
	return max(at, min(int(int64(m.reached)*int64(w)/int64(tl.Duration())), w))
}

// scale is what the scrubber's bar is laid out by.
type scale int

const (
	byTime scale = iota
	byFrame
	byStep
)

var scaleNames = [...]string{byTime: "time", byFrame: "frame", byStep: "step"}

// segments is how many parts the bar has by step: each whole step, and
// the frames after the last one when there are any.
func (m *scrubber) segments() int {
	tl := m.tv.tl
	return max(tl.StepOf(tl.Len()-1)+1, 1)
}

// SetSize sets the width; the scrubber is always two lines.
func (m *scrubber) SetSize(w, _ int) { m.w = w }

// ShortHelp has no keys: the scrubber follows the timeline.
func (m *scrubber) ShortHelp() []key.Binding { return nil }

// FullHelp has no keys.
func (m *scrubber) FullHelp() [][]key.Binding { return nil }

// barWidth is the number of cells of the bar.
func (m *scrubber) barWidth() int { return max(m.w-2, 1) }

// pos is the bar cell of frame i.
func (m *scrubber) pos(i int) int {
	tl := m.tv.tl
	n, dur := tl.Len(), tl.Duration()
	if n <= 1 {
		return 0
	}
	w := m.barWidth() - 1
	switch {
	case m.scale == byStep:
		s := tl.StepOf(i)
		start, end := tl.StepStart(s), min(tl.StepStart(s+1), n)
		within := 0.0
		if end-start > 1 {
			within = float64(i-start) / float64(end-start)
		}
		return min(int((float64(s)+within)*float64(w)/float64(m.segments())+0.5), w)
	case m.scale == byFrame || dur <= 0:
		return i * w / (n - 1)
	}
	_, t := tl.KindAt(i)
	return int(int64(t) * int64(w) / int64(dur))
}

// frameAt is the frame under bar cell x (x counts from the pane's left edge).
func (m *scrubber) frameAt(x int) int {
	tl := m.tv.tl
	x = max(0, min(x-1, m.barWidth()-1))
	if tl.Len() == 0 {
		return 0
	}
	w := max(m.barWidth()-1, 1)
	switch m.scale {
	case byStep:
		f := float64(x) * float64(m.segments()) / float64(w)
		s := min(int(f), m.segments()-1)
		start, end := tl.StepStart(s), min(tl.StepStart(s+1), tl.Len())
		return min(start+int((f-float64(s))*float64(end-start)), max(end-1, start))
	case byFrame:
		return x * (tl.Len() - 1) / w
	}
	if dur := tl.Duration(); dur > 0 {
		return tl.FrameAt(time.Duration(int64(dur) * int64(x) / int64(max(m.barWidth()-1, 1))))
	}
	return x * (tl.Len() - 1) / max(m.barWidth()-1, 1)
}

// View draws the bar and the line under it.
func (m *scrubber) View() string {
	return m.bar() + "\n" + fit(m.info(), m.w)
}

func (m *scrubber) bar() string {
	w := m.barWidth()
	cells := make([]string, w)
	needle := m.needle()
	for x := range cells {
		if x <= needle {
			cells[x] = m.st.Played.Render("━")
		} else {
			cells[x] = m.st.Unseen.Render("─")
		}
	}
	tl := m.tv.tl
	if tl.Steps() <= w/3 {
		for s := 1; s <= tl.Steps(); s++ {
			if i := tl.StepStart(s); i < tl.Len() {
				cells[m.pos(i)] = m.st.Rule.Render("┼")
			}
		}
	}
	put := func(i int, glyph string, st func(string) string) {
		if i >= 0 && i < tl.Len() {
			cells[m.pos(i)] = st(glyph)
		}
	}
	for i := range m.tv.markers {
		put(i, "◆", render(m.st.Marker))
	}
	put(m.tv.forkAt, "⑂", render(m.st.Fork))
	put(m.tv.diverge, "≠", render(m.st.Warn))
	cells[needle] = m.st.Needle.Render("┃")
	return m.st.Muted.Render("▕") + strings.Join(cells, "") + m.st.Muted.Render("▏")
}

func (m *scrubber) info() string {
	tl, i := m.tv.tl, m.tv.cursor
	_, t := tl.KindAt(i)
	if m.playing {
		// The clock runs while playing, through a long streamed call or
		// a wait as recorded, not only when the needle reaches a frame.
		t = max(t, min(m.reached, tl.Duration()))
	}
	tok, cost := tl.Totals(i)
	parts := []string{
		stepText(tl.StepNumber(i), tl.StepCount()),
		fmt.Sprintf("frame %d/%d", i, tl.Len()),
		timeline.Clock(t) + " / " + timeline.Clock(tl.Duration()),
		fmt.Sprintf("%s so far · %s tok", costText(tl, i, cost), count(tok)),
	}
	if note := m.tv.notes[i]; note != "" && m.tv.markers[i] {
		parts = append(parts, "⚑ "+timeline.OneLine(note, 40))
	}
	state := "❚❚ paused"
	if m.playing {
		state = "▶ playing"
	}
	parts = append(parts, fmt.Sprintf("%s %dx", state, m.speed))
	if m.scale != byTime {
		parts = append(parts, "by "+scaleNames[m.scale])
	}
	if len(m.tv.markers) > 0 {
		parts = append(parts, fmt.Sprintf("◆ %d", len(m.tv.markers)))
	}
	for j := range parts {
		parts[j] = m.st.Text.Render(parts[j])
	}
	return " " + strings.Join(parts, m.st.Muted.Render(" · "))
}

// stepText says where a frame of step s (0-based, as StepNumber counts)
// is among n steps (StepCount), counting from 1 as the header's "n steps"
// and the step view's rows do.
func stepText(s, n int) string {
	if n == 0 {
		return "no step: no model call" // a step opens at a call (finished tapes without one said "yet")
	}
	return fmt.Sprintf("step %d/%d", s+1, n)
}
