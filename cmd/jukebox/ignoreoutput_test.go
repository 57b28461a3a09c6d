package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestIgnoreOutputAndFirstDifferingLine: an agent that prints a timing
// fails replay --strict, and the message and --json name the first line
// that differs on each side; --ignore-output on that timing passes; a bad
// pattern is a usage error naming the flag.
func TestIgnoreOutputAndFirstDifferingLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tape := filepath.Join(dir, "timing.jbx")
	run := func(args ...string) (string, string, int) { return jbIn(dir, nil, args...) }
	agent := []string{"--", "sh", "-c", `echo start; echo "took $$ ms"; echo end`} // another pid each run
	if _, errOut, code := run(append([]string{"record", "-o", tape}, agent...)...); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errOut)
	}
	_, errOut, code := run(append([]string{"replay", "--strict", tape}, agent...)...)
	if code != ExitDiffers || !strings.Contains(errOut, "first at line 2 (recorded \"took ") {
		t.Fatalf("replay --strict: exit %d, want %d naming line 2:\n%s", code, ExitDiffers, errOut)
	}
	out, _, _ := run(append([]string{"replay", "--json", tape}, agent...)...)
	var res struct {
		OutputDiff *struct {
			Line               int
			Recorded, Replayed string
		} `json:"output_diff"`
	}
	json.Unmarshal([]byte(out), &res)
	if d := res.OutputDiff; d == nil || d.Line != 2 || !strings.HasPrefix(d.Recorded, "took ") || !strings.HasPrefix(d.Replayed, "took ") {
		t.Fatalf("replay --json has no first differing line:\n%s", out)
	}
	if _, errOut, code := run(append([]string{"replay", "--strict", "--ignore-output", `took \d+ ms`, tape}, agent...)...); code != 0 {
		t.Fatalf("replay --strict --ignore-output: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := run("replay", "--ignore-output", "(", tape); code != ExitUsage || !strings.Contains(errOut, "--ignore-output") {
		t.Fatalf("a bad pattern: exit %d\n%s", code, errOut)
	}
}

// TestIgnoreOutputGivenToRecord: record --ignore-output writes its
// patterns into the tape, so replay --strict passes without the flag and
// rules shows them; a replay's own patterns add to the tape's.
func TestIgnoreOutputGivenToRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tape := filepath.Join(dir, "timing.jbx")
	run := func(args ...string) (string, string, int) { return jbIn(dir, nil, args...) }
	agent := []string{"--", "sh", "-c", `echo start; echo "took $$ ms"; echo "pid $$"`}
	if _, errOut, code := run(append([]string{"record", "--ignore-output", `took \d+ ms`, "-o", tape}, agent...)...); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errOut)
	}
	// Line 2 is the tape's to ignore; line 3 still differs.
	_, errOut, code := run(append([]string{"replay", "--strict", tape}, agent...)...)
	if code != ExitDiffers || !strings.Contains(errOut, "first at line 3") {
		t.Fatalf("replay --strict: exit %d, want %d at line 3 (line 2 ignored by the tape's pattern):\n%s", code, ExitDiffers, errOut)
	}
	if _, errOut, code := run(append([]string{"replay", "--strict", "--ignore-output", `pid \d+`, tape}, agent...)...); code != 0 {
		t.Fatalf("replay --strict with its own pattern beside the tape's: exit %d\n%s", code, errOut)
	}
	out, errOut, code := run("rules", "--json", tape)
	var rules struct {
		IgnoreOutput []string `json:"ignore_output"`
	}
	if err := json.Unmarshal([]byte(out), &rules); err != nil || code != 0 || len(rules.IgnoreOutput) != 1 || rules.IgnoreOutput[0] != `took \d+ ms` {
		t.Fatalf("rules --json: exit %d, %v, %+v\n%s%s", code, err, rules, out, errOut)
	}
	if _, errOut, code := run("record", "--ignore-output", "(", "--", "true"); code != ExitUsage || !strings.Contains(errOut, "--ignore-output") {
		t.Fatalf("record with a bad pattern: exit %d\n%s", code, errOut)
	}
}
