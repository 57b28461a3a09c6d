package tui

import (
	"fmt"
	"strings"
	"time"

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

// clock formats a time offset as m:ss.mmm.
func clock(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

// usd formats a cost with the precision small costs need.
func usd(c float64) string {
	switch {
	case c == 0:
		return "$0"
	case c < 0.001:
		return "$" + strings.TrimRight(fmt.Sprintf("%.6f", c), "0")
	case c < 0.01:
		return fmt.Sprintf("$%.4f", c)
	case c < 100:
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.0f", c)
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

// oneLine flattens s to one line; control characters become spaces.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r < ' ' || r == ' ' || r == 0x7f }), " ")
}

// sanitize makes text safe to print: tabs become spaces and other control
// characters their Unicode pictures, so a tape cannot drive the terminal.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t':
			return ' '
		case r < ' ':
			return 0x2400 + r
		case r == 0x7f:
			return '␡'
		}
		return r
	}, s)
}

// visibleWidth is the width of s on screen, escape sequences left out.
func visibleWidth(s string) int { return ansi.StringWidth(s) }
