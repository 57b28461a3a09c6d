package engine

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/diffview"
)

// maxDiffLine is the longest line a divergence's diff shows whole. A
// longer one (a body that is one long string, a base64 image, a staged
// file's content) shows the part around its first difference from its
// counterpart on the other side, saying how many bytes it left out: a
// diff of a 64 MiB body printed all of it, twice.
const maxDiffLine = 2000

// divergenceDiff is the unified diff of a divergence's recorded and live
// forms, its long lines cut (maxDiffLine).
func divergenceDiff(expected, actual string) string {
	d := diffview.TextDiff("recorded", "live", expected, actual)
	if len(d) <= maxDiffLine {
		return d
	}
	lines := strings.SplitAfter(d, "\n")
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l
		if len(l) > maxDiffLine {
			out[i] = clipLine(l, counterpart(lines, i))
		}
	}
	return strings.Join(out, "")
}

// counterpart is the line the i-th one of a hunk is compared with: for a
// removed line the first added one after it, for an added line the last
// removed one before it; "" for a line of context or none.
func counterpart(lines []string, i int) string {
	if lines[i] == "" {
		return ""
	}
	switch lines[i][0] {
	case '-':
		for j := i + 1; j < len(lines) && lines[j] != "" && (lines[j][0] == '-' || lines[j][0] == '+'); j++ {
			if lines[j][0] == '+' {
				return lines[j]
			}
		}
	case '+':
		for j := i - 1; j >= 0 && lines[j] != "" && (lines[j][0] == '-' || lines[j][0] == '+'); j-- {
			if lines[j][0] == '-' {
				return lines[j]
			}
		}
	}
	return ""
}

// clipLine cuts l (its sign first) to about maxDiffLine bytes around the
// first byte where it differs from other (its sign first too).
func clipLine(l, other string) string {
	if other != "" {
		other = other[1:]
	}
	return l[:1] + clipAround(strings.TrimSuffix(l[1:], "\n"), other, maxDiffLine) + "\n"
}

// clipAround cuts text longer than limit bytes to about limit bytes
// around the first byte where it differs from other, on rune boundaries,
// saying how many bytes it left out before and after.
func clipAround(text, other string, limit int) string {
	if len(text) <= limit {
		return text
	}
	at := 0
	for at < len(text) && at < len(other) && text[at] == other[at] {
		at++
	}
	start := max(0, at-limit/4)
	end := min(len(text), start+limit)
	for start > 0 && !utf8.RuneStart(text[start]) {
		start--
	}
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end--
	}
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "[%d bytes left out] ", start)
	}
	b.WriteString(text[start:end])
	if end < len(text) {
		fmt.Fprintf(&b, " [%d bytes more]", len(text)-end)
	}
	return b.String()
}
