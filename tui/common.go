package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// Component is what every pane of the deck shares (soft-serve's
// pkg/ui/common): a Bubble Tea model that knows its keys, for the help
// line, and is told its size. Each component also has an update method
// returning its own concrete type, which the deck calls, so no type
// assertions are needed (glow's pattern).
type Component interface {
	tea.Model
	help.KeyMap
	SetSize(width, height int)
}

// fit truncates s to w cells and pads it with spaces to exactly w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	n := ansi.StringWidth(s)
	if n > w {
		return ansi.Truncate(s, w, "…")
	}
	return s + strings.Repeat(" ", w-n)
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
