package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTapeNameStaysInTapes: a run's name became the tape's file name as it
// was, so "../../../../ESCAPED" (given to --name, or recorded in a tape
// someone sent, whose fork or replay is named after it) wrote the tape
// four folders above ./tapes. The name is made a file name in ./tapes.
func TestTapeNameStaysInTapes(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"../../../../ESCAPED":    "-..-..-..-ESCAPED",
		"a/b\\c":                 "a-b-c",
		"...":                    "run",
		"":                       "run",
		"esc\x1b[2Jx":            "esc-[2Jx",
		"ok name":                "ok name",
		strings.Repeat("é", 100): strings.Repeat("é", 60),
	} {
		if got := fileStem(name); got != want {
			t.Errorf("fileStem(%q) = %q, want %q", name, got, want)
		}
	}
	root := t.TempDir()
	deep := filepath.Join(root, "victim", "a", "b", "c")
	must(t, os.MkdirAll(deep, 0o755))
	if _, errs, code := jbIn(deep, nil, "record", "--name", "../../../../ESCAPED", "--", "sh", "-c", "echo hi"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	var found []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jbx") {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 || filepath.Dir(found[0]) != filepath.Join(deep, "tapes") {
		t.Errorf("the tape went to %v, want one in %s", found, filepath.Join(deep, "tapes"))
	}
}
