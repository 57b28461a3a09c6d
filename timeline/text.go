package timeline

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/llmwire"
)

// Text as jukebox shows it on a terminal, shared by the CLI and the
// turntable. Everything shown comes from a tape, so control characters
// never reach the terminal as they are: a tape cannot drive it.

// OneLine flattens s to one line: runs of white space become one space;
// other control characters, bidi controls and invisible characters show
// as termtext.Sanitize shows them (ESC as ␛, U+202E as �), as the frame
// view does.
// With n > 0 it is cut to n runes, the last one an ellipsis.
func OneLine(s string, n int) string {
	s = termtext.Sanitize(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
	}), " "))
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// ExpandTabs turns each tab into the spaces that reach the next stop
// (every 4 columns), line by line, for text shown whole (a prompt, a
// file), where termtext.Sanitize would make each tab one space.
func ExpandTabs(s string) string {
	if !strings.Contains(s, "\t") {
		return s
	}
	var b strings.Builder
	col := 0
	for _, r := range s {
		switch r {
		case '\t':
			n := 4 - col%4
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case '\n':
			b.WriteRune(r)
			col = 0
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// Clock formats a time offset in a run as m:ss.mmm.
func Clock(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

// Approx is "~" when n calls (more than none) had their usage counted
// rather than reported (llmwire.CallUsage.Estimated), else "": what a view
// puts before the tokens and cost they add to.
func Approx(n int) string {
	if n > 0 {
		return "~"
	}
	return ""
}

// USD formats a cost with the precision small costs need.
func USD(c float64) string {
	switch {
	case c == 0:
		return "$0"
	case c < 1e-12:
		return fmt.Sprintf("$%.1e", c)
	case c < 0.001:
		// Six places, or two significant digits where six hold fewer:
		// six alone left "$0." for a cost under half a millionth.
		places := max(6, int(-math.Floor(math.Log10(c)))+1)
		return "$" + strings.TrimRight(fmt.Sprintf("%.*f", places, c), "0")
	case c < 0.01:
		return fmt.Sprintf("$%.4f", c)
	case c < 100:
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.0f", c)
}

// indentJSON pretty-prints JSON so that a word diff reads key by key; text
// that is not JSON, or nests too deep to indent, is returned as it is.
func indentJSON(raw []byte) string { return llmwire.Indent(raw) }

// jsonText returns a JSON string's value, or other JSON indented.
func jsonText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return indentJSON(raw)
}
