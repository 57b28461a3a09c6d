package engine

import (
	"bytes"
	"fmt"
	"regexp"
)

// OutputDiff is where a replay's stdout first differs from the
// recording's, after the masks and IgnoreOutput applied: the line (from
// 1) and that line on each side; "(end of output)" when one side has no
// such line.
type OutputDiff struct {
	Line     int    `json:"line"`
	Recorded string `json:"recorded"`
	Replayed string `json:"replayed"`
}

// outputPatterns compiles the patterns of IgnoreOutput, the recording's
// (run.start ignore_output) and the replay's own.
func outputPatterns(pats []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for _, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("ignore-output pattern %q: %v", p, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// endOfOutput stands for the line a shorter output does not have.
const endOfOutput = "(end of output)"

// compareOutput compares the two outputs line by line, each line with
// every match of ignore replaced by "…"; nil when they are the same.
func compareOutput(recorded, replayed []byte, ignore []*regexp.Regexp) *OutputDiff {
	rec, rep := bytes.SplitAfter(recorded, []byte("\n")), bytes.SplitAfter(replayed, []byte("\n"))
	for i := 0; i < max(len(rec), len(rep)); i++ {
		a, b := lineAt(rec, i, ignore), lineAt(rep, i, ignore)
		if a != b {
			return &OutputDiff{Line: i + 1, Recorded: a, Replayed: b}
		}
	}
	if len(ignore) == 0 && !bytes.Equal(recorded, replayed) { // a newline at the end only
		// The last line, which both have ("a\nb" and "a\nb\n" differ on
		// line 2; counting the pieces SplitAfter makes said line 3).
		n := max(lineCount(recorded), lineCount(replayed))
		return &OutputDiff{Line: n, Recorded: lastLine(recorded), Replayed: lastLine(replayed)}
	}
	return nil
}

// lineCount is the number of lines of out, the last one with or without
// its newline.
func lineCount(out []byte) int {
	n := bytes.Count(out, []byte("\n"))
	if len(out) > 0 && out[len(out)-1] != '\n' {
		n++
	}
	return n
}

// lastLine is out's last line, as written, its newline shown as "\n".
func lastLine(out []byte) string {
	i := bytes.LastIndexByte(bytes.TrimSuffix(out, []byte("\n")), '\n')
	return string(bytes.ReplaceAll(out[i+1:], []byte("\n"), []byte(`\n`)))
}

// lineAt is line i of lines, normalised, without its newline.
func lineAt(lines [][]byte, i int, ignore []*regexp.Regexp) string {
	if i >= len(lines) || (i == len(lines)-1 && len(lines[i]) == 0) {
		return endOfOutput
	}
	l := bytes.TrimSuffix(lines[i], []byte("\n"))
	for _, re := range ignore {
		l = re.ReplaceAll(l, []byte("…"))
	}
	return string(l)
}
