package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/x/ansi"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Component is what every pane of the deck is (soft-serve's
// pkg/ui/common, without the parts no pane needs): it draws itself, knows
// its keys (for the help line and the help overlay) and is told its size.
// The deck holds the pane with the keyboard as a Component (Deck.active).
//
// Each pane also has an update method for the keys it owns, typed to what
// that pane needs (glow's pattern: no type assertions). A modal pane (a
// prompt, the fork form, the diff) answers with a verdict instead of
// reaching into the deck; the deck then reads the pane's answer and acts.
// So a pane's file holds all of it (model, keys, update, view) and the
// deck's files (deck*.go) route and carry out.
type Component interface {
	help.KeyMap
	SetSize(width, height int)
	View() string
}

// The panes.
var _ = []Component{(*timelineView)(nil), (*scrubber)(nil), (*frameView)(nil), (*prompt)(nil), (*forkForm)(nil), (*diffPane)(nil), (*forkList)(nil)}

// verdict is what a key given to a modal pane asks of the deck.
type verdict int

const (
	stay      verdict = iota // the pane keeps the keyboard
	done                     // the pane has its answer: the deck reads it and closes the pane
	dismissed                // the pane is closed without an answer
)

// fit truncates s to w cells and pads it with spaces to exactly w. Its
// text is made uniform first (termtext.Uniform), so the cells counted are
// the cells every terminal draws.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	s = termtext.Uniform(s)
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
}

// onScreen is the last pass over a screen before the terminal gets it:
// every line is made uniform (termtext.Uniform) and cut to w cells, so no
// line can wrap and scroll the screen, whatever text a pane let through.
func onScreen(view string, w int) string {
	lines := strings.Split(view, "\n")
	for i, l := range lines {
		if l = termtext.Uniform(l); ansi.StringWidth(l) > w {
			l = ansi.Truncate(l, w, "…")
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// box lays lines out as exactly h lines of exactly w cells.
func box(lines []string, w, h int) string {
	out := make([]string, h)
	for i := range h {
		l := ""
		if i < len(lines) {
			l = lines[i]
		}
		out[i] = fit(l, w)
	}
	return strings.Join(out, "\n")
}

// count formats n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// counted is n and the word for n of them: "1 message", "2 messages",
// "12,000 frames" (thousands separated, as count does).
func counted(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + many
}

// visibleWidth is the width of s on screen, escape sequences left out.
func visibleWidth(s string) int { return ansi.StringWidth(s) }
