package diffview

import (
	"fmt"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// unifiedContext is how many unchanged lines a hunk shows around a change.
const unifiedContext = 3

// lineOp is one line of a line diff: ' ' kept, '-' deleted, '+' inserted.
type lineOp struct {
	kind byte
	text string // with its newline, when it had one
}

// TextDiff is a unified diff of two texts (a prompt, a request body, a
// file) in the format of diff -u, for divergence reports and file changes,
// three lines of context; "" when they are equal.
func TextDiff(nameA, nameB, a, b string) string {
	ops := lineDiff(a, b)
	hunks := hunkRanges(ops)
	if len(hunks) == 0 {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	oldLine, newLine, at := 1, 1, 0
	for _, h := range hunks {
		for ; at < h[0]; at++ {
			oldLine, newLine = advance(ops[at].kind, oldLine, newLine)
		}
		writeHunk(&out, ops[h[0]:h[1]], oldLine, newLine)
	}
	return out.String()
}

// lineDiff diffs a and b line by line (go-diff's line mode).
func lineDiff(a, b string) []lineOp {
	dmp := diffmatchpatch.New()
	ca, cb, lines := dmp.DiffLinesToChars(a, b)
	var ops []lineOp
	for _, d := range dmp.DiffCharsToLines(dmp.DiffMain(ca, cb, false), lines) {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		for _, l := range strings.SplitAfter(d.Text, "\n") {
			if l != "" {
				ops = append(ops, lineOp{kind: kind, text: l})
			}
		}
	}
	return ops
}

// hunkRanges are the [start, end) op ranges of the hunks: each change with
// its context, hunks whose contexts touch merged.
func hunkRanges(ops []lineOp) [][2]int {
	var hunks [][2]int
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		start, end := max(i-unifiedContext, 0), min(j+unifiedContext, len(ops))
		if n := len(hunks); n > 0 && start <= hunks[n-1][1] {
			hunks[n-1][1] = end
		} else {
			hunks = append(hunks, [2]int{start, end})
		}
		i = j
	}
	return hunks
}

func advance(kind byte, oldLine, newLine int) (int, int) {
	if kind != '+' {
		oldLine++
	}
	if kind != '-' {
		newLine++
	}
	return oldLine, newLine
}

// writeHunk writes one hunk whose first lines are oldLine and newLine.
func writeHunk(out *strings.Builder, ops []lineOp, oldLine, newLine int) {
	var oldCount, newCount int
	for _, op := range ops {
		oldCount, newCount = advance(op.kind, oldCount, newCount)
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(oldLine, oldCount), hunkRange(newLine, newCount))
	for _, op := range ops {
		out.WriteByte(op.kind)
		out.WriteString(op.text)
		if !strings.HasSuffix(op.text, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange is "line,count", "line" for one line, and "0,0" for an empty
// side at the start, as diff -u writes them.
func hunkRange(line, count int) string {
	switch {
	case count > 1:
		return fmt.Sprintf("%d,%d", line, count)
	case count == 0 && line == 1:
		return "0,0"
	}
	return fmt.Sprint(line)
}
