package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Text as jukebox shows it on a terminal, shared by the CLI and the
// turntable. Everything shown comes from a tape, so control characters
// never reach the terminal as they are: a tape cannot drive it.

// OneLine flattens s to one line: runs of white space and control
// characters become one space. With n > 0 it is cut to n runes, the last
// one an ellipsis.
func OneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Sanitize keeps newlines, turns tabs into spaces and other control
// characters into their Unicode pictures (ESC into ␛).
func Sanitize(s string) string {
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

// Clock formats a time offset in a run as m:ss.mmm.
func Clock(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("%d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}

// USD formats a cost with the precision small costs need.
func USD(c float64) string {
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

// indentJSON pretty-prints JSON so that a word diff reads key by key; text
// that is not JSON is returned as it is.
func indentJSON(raw []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, raw, "", "  ") != nil {
		return string(raw)
	}
	return out.String()
}

// jsonText returns a JSON string's value, or other JSON indented.
func jsonText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return indentJSON(raw)
}
