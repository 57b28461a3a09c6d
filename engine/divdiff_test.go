package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestDivergenceDiffCutsLongLines: a divergence's diff of a body that is
// one long line (a staged write of 64 MiB, an image in base64) printed
// all of it on each side. A line over maxDiffLine shows the part around
// its first difference from its counterpart, saying what it left out;
// the short lines around it stay whole.
func TestDivergenceDiffCutsLongLines(t *testing.T) {
	long := strings.Repeat("é", 300_000) // 600 KB, two bytes a rune
	rec := "{\n  \"path\": \"big.txt\",\n  \"content\": \"" + long + "OLD" + long + "\"\n}"
	live := "{\n  \"path\": \"big.txt\",\n  \"content\": \"" + long + "NEW" + long + "\"\n}"
	d := divergenceDiff(rec, live)
	if len(d) > 6*maxDiffLine {
		t.Fatalf("the diff of two 1.2 MB lines is %d bytes", len(d))
	}
	for _, want := range []string{"--- recorded", "+++ live", `"path": "big.txt",`, "OLD", "NEW", "bytes left out]", "bytes more]"} {
		if !strings.Contains(d, want) {
			t.Errorf("the diff lacks %q:\n%s", want, d)
		}
	}
	if !utf8.ValidString(d) {
		t.Errorf("a cut is not on a rune's start:\n%.300s", d)
	}
	for _, l := range strings.Split(d, "\n") {
		if !strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "+") {
			continue
		}
		if strings.Contains(l, "content") && !strings.Contains(l, "OLD") && !strings.Contains(l, "NEW") {
			t.Errorf("a cut line lost its difference: %.200s", l)
		}
	}
	short := divergenceDiff("{\n  \"a\": 1\n}", "{\n  \"a\": 2\n}")
	if strings.Contains(short, "bytes") {
		t.Errorf("a short diff was cut:\n%s", short)
	}
}

// TestOutputDiffTextCutsLongLines: the verdict's first differing line of
// stdout, quoted in the replay's summary, is cut around its difference:
// an agent that printed its streamed answer on one line made the summary
// of a long run hundreds of kilobytes (--json keeps the lines whole).
func TestOutputDiffTextCutsLongLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("the plan is to update the parser ", 10000)
	d := &OutputDiff{Line: 1, Recorded: long + "the end", Replayed: long + "another end"}
	text := d.Text()
	if len(text) > 1000 || !strings.Contains(text, "the end") || !strings.Contains(text, "another end") || !strings.Contains(text, "bytes left out") {
		t.Errorf("a long line's verdict (%d bytes): %.300q", len(text), text)
	}
	if short := (&OutputDiff{Line: 3, Recorded: "a", Replayed: "b"}).Text(); short != ` first at line 3 (recorded "a", replayed "b")` {
		t.Errorf("a short line's verdict: %q", short)
	}
}

// TestOutputDiffLineOfAFinalNewline: outputs that differ only in the
// newline after their last line differ on that line: "a\nb" and "a\nb\n"
// on line 2 (it said line 3, which neither has).
func TestOutputDiffLineOfAFinalNewline(t *testing.T) {
	for _, c := range []struct {
		rec, rep string
		line     int
	}{{"a\nb", "a\nb\n", 2}, {"a\nb\n", "a\nb", 2}, {"x", "x\n", 1}, {"a\n\n", "a\n\nc", 3}} {
		d := compareOutput([]byte(c.rec), []byte(c.rep), nil)
		if d == nil || d.Line != c.line {
			t.Errorf("%q against %q: %+v, want line %d", c.rec, c.rep, d, c.line)
		}
	}
}

// TestNotReproducedCounts: "1 recorded calls never asked for" read as a
// slip; counts agree with their nouns.
func TestNotReproducedCounts(t *testing.T) {
	for n, want := range map[int]string{1: "1 recorded call never asked for", 3: "3 recorded calls never asked for"} {
		if got := (&Result{Unused: n}).NotReproduced(); got != want {
			t.Errorf("%d unused: %q, want %q", n, got, want)
		}
	}
}
