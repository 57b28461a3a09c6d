package diffview

import (
	"fmt"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// totalsRows is the totals table: a heading and one row per measure, with
// the left, right and delta columns already formatted.
func totalsRows(r *Result) [][4]string {
	l, rt, d := r.LeftTotals, r.RightTotals, r.Delta
	return [][4]string{
		{"", "left", "right", "delta"},
		{"frames", count(l.Frames), count(rt.Frames), signed(count(d.Frames), d.Frames)},
		{"steps", count(l.Steps), count(rt.Steps), signed(count(d.Steps), d.Steps)},
		{"llm calls", count(l.Calls), count(rt.Calls), signed(count(d.Calls), d.Calls)},
		{"tokens", approx(l) + count(l.Tokens), approx(rt) + count(rt.Tokens), signed(count(d.Tokens), d.Tokens)},
		{"cost", cost(l), cost(rt), signedF(usd(d.Cost), d.Cost)},
		{"latency", secs(l.Latency), secs(rt.Latency), signedF(secs(d.Latency), d.Latency.Seconds())},
		{"duration", secs(l.Duration), secs(rt.Duration), signedF(secs(d.Duration), d.Duration.Seconds())},
	}
}

// totalsText renders the totals table, right-aligned columns each as wide
// as its widest cell (16 at most where they are narrower), so that it
// fits the narrowest layout whole.
func totalsText(r *Result, st Styles) []string {
	rows := totalsRows(r)
	var w [4]int
	for _, row := range rows {
		for i, c := range row {
			w[i] = max(w[i], runewidth.StringWidth(c))
		}
	}
	for i := 1; i < 4; i++ {
		w[i] = max(w[i]+2, min(16, w[i]+6))
	}
	var out []string
	for i, row := range rows {
		s := fmt.Sprintf("%-*s %*s %*s %*s", w[0], row[0], w[1], row[1], w[2], row[2], w[3], row[3])
		if i == 0 {
			s = st.apply(clsHeader, s)
		}
		out = append(out, strings.TrimRight(s, " "))
	}
	return out
}

// summary is one side's totals in one line, for the heading.
func summary(t Totals) string {
	return fmt.Sprintf("%s · %s · %s · %s tok · %s · %s",
		termtext.Count(t.Frames, "frame", "frames"), termtext.Count(t.Steps, "step", "steps"),
		termtext.Count(t.Calls, "call", "calls"), approx(t)+count(t.Tokens), cost(t), secs(t.Duration))
}

// approx is "~" for a side with calls whose usage was counted, not
// reported, as `jukebox ls` marks them.
func approx(t Totals) string {
	if t.Estimated > 0 {
		return "~"
	}
	return ""
}

// cost is one side's cost, marked "+?" when some calls have no price and
// "~" when some had their usage counted, as `jukebox ls` marks it.
func cost(t Totals) string {
	if t.Unpriced > 0 {
		return approx(t) + usd(t.Cost) + "+?"
	}
	return approx(t) + usd(t.Cost)
}

// count formats an integer with thousands separators.
func count[T int | int64](n T) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func usd(v float64) string {
	s := fmt.Sprintf("$%.6f", abs(v))
	if v < 0 && s != "$0.000000" {
		return "-" + s
	}
	return s
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func abs(v float64) float64 { return max(v, -v) }

// signed puts a plus before a positive delta.
func signed[T int | int64](s string, v T) string {
	if v > 0 {
		return "+" + s
	}
	return s
}

func signedF(s string, v float64) string {
	if v > 0 && strings.Trim(s, "$0.s") != "" {
		return "+" + s
	}
	return s
}
