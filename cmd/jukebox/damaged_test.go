package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrictReplayOfADamagedTape: a tape whose output or end frame is
// damaged (one byte flipped) is exit 3 under replay --strict, naming the
// tape, the frame and what could not be compared. The comparison was
// skipped without a word: an agent whose output (or exit status)
// differed passed with exit 0 (or its own code).
func TestStrictReplayOfADamagedTape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := `i=0; while [ $i -lt 40 ]; do echo "output line number $i"; i=$((i+1)); done`
	_, errs, code := jbIn(dir, nil, "record", "-o", "t.jbx", "--", "sh", "-c", agent)
	if code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	data, err := os.ReadFile(filepath.Join(dir, "t.jbx"))
	must(t, err)
	// Each time another agent: the output differs from the recording's
	// (the same exit), or the exit does (the same output).
	for _, c := range []struct {
		name, at, want, agent string
	}{
		{"output", "output line number 20", "the recorded output does not read", "echo other"},
		{"end", `"exit_code"`, "the recorded run's end does not read", agent + "; exit 4"},
	} {
		i := bytes.Index(data, []byte(c.at))
		if i < 0 {
			t.Fatalf("%q is not in the tape's bytes", c.at)
		}
		d := bytes.Clone(data)
		d[i+3] ^= 0x01
		must(t, os.WriteFile(filepath.Join(dir, c.name+".jbx"), d, 0o644))
		_, errs, code := jbIn(dir, nil, "replay", "--strict", c.name+".jbx", "--", "sh", "-c", c.agent)
		if code != ExitBadTape || !strings.Contains(errs, c.name+".jbx: "+c.want) || !strings.Contains(errs, "checksum mismatch") {
			t.Errorf("replay --strict of a tape with its %s damaged: exit %d, want %d naming what does not read\n%s", c.name, code, ExitBadTape, errs)
		}
	}
}

// TestCostOfACutTape: jukebox cost of a tape cut short (a killed
// recording) says the bill is of what the tape kept; it printed a partial
// bill without a word.
func TestCostOfACutTape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, errs, code := jbIn(dir, nil, "record", "-o", "t.jbx", "--", "sh", "-c", "echo one; echo two"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	data, err := os.ReadFile(filepath.Join(dir, "t.jbx"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "cut.jbx"), data[:len(data)-100], 0o644))
	if _, errs, code := jbIn(dir, nil, "cost", "cut.jbx"); code != ExitOK || !strings.Contains(errs, "cut.jbx: tape has no footer") ||
		!strings.Contains(errs, "the bill is of the calls up to there") {
		t.Errorf("cost of a cut tape: exit %d\n%s", code, errs)
	}
}
