package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileFileNamesEscaped: tape contents were made safe for a
// terminal, file names were not: a damaged tape named
// "x\r\x1b[2Kok    release.jbx: ..." showed as "ok" in verify's output
// (which failed it), and in ls and in the errors. Names are escaped; and
// ls named no tape (an empty path) for a bit flipped in a frame table.
func TestHostileFileNamesEscaped(t *testing.T) {
	t.Parallel()
	src := filepath.Join(sampleTapes(t), "agent-run.jbx")
	dir := t.TempDir()
	good, err := os.ReadFile(src)
	must(t, err)
	bad := append([]byte(nil), good...)
	bad[300] ^= 1 // a frame's payload
	evil := "x\r\x1b[2Kok    release.jbx: 26 frames\x1b]52;c;cHduZWQ=\x07.jbx"
	must(t, os.WriteFile(filepath.Join(dir, evil), bad, 0o644))
	flipped := append([]byte(nil), good...)
	table := binary.LittleEndian.Uint64(flipped[len(flipped)-128+8:]) // the footer: where the frame table starts
	flipped[table+8] ^= 1
	must(t, os.WriteFile(filepath.Join(dir, "flipped.jbx"), flipped, 0o644))
	for _, args := range [][]string{{"verify", dir}, {"ls", dir}, {"show", filepath.Join(dir, evil)}, {"cost", filepath.Join(dir, evil, "nope.jbx")}} {
		_, out, errs := jb(t, args...)
		if strings.ContainsAny(out+errs, "\x1b\r\x07") {
			t.Errorf("jukebox %s printed raw control characters:\n%q\n%q", args[0], out, errs)
		}
	}
	_, out, errs := jb(t, "ls", dir)
	if !strings.Contains(out, "DAMAGED "+filepath.Join(dir, "flipped.jbx")) || strings.Contains(errs, "read: \n") || !strings.Contains(errs, "flipped.jbx") {
		t.Errorf("ls of a tape with a flipped frame table does not name it:\n%s%s", out, errs)
	}
}
