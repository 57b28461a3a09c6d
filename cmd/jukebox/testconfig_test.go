package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTapeEntriesApplyInOrder: a tape matched by a glob and by its own
// name in jukebox.json ran either command from one run to the next (the
// entries applied in a map's order); a name that reads as a glob, a[1].jbx,
// did not match itself; a malformed glob was taken and matched nothing.
// The globs apply in their keys' order, the exact name over them.
func TestTapeEntriesApplyInOrder(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "jukebox.json"), []byte(`{"command": ["folder"],
		"tapes": {"*.jbx": {"command": ["any"]}, "b.jbx": {"command": ["b"]}, "b*.jbx": {"command": ["b-glob"]},
		          "a[1].jbx": {"command": ["a1"]}}}`), 0o644))
	for range 20 {
		var cs testConfigs
		for tape, want := range map[string]string{"b.jbx": "b", "bc.jbx": "b-glob", "c.jbx": "any", "a[1].jbx": "a1"} {
			s, err := cs.forTape(filepath.Join(dir, tape))
			if err != nil || !slices.Equal(s.Command, []string{want}) {
				t.Fatalf("%s: %v, %v; want [%s]", tape, s.Command, err, want)
			}
		}
	}
	bad := t.TempDir()
	must(t, os.WriteFile(filepath.Join(bad, "jukebox.json"), []byte(`{"tapes": {"a[1.jbx": {"command": ["x"]}}}`), 0o644))
	var cs testConfigs
	if _, err := cs.forTape(filepath.Join(bad, "a.jbx")); err == nil || !strings.Contains(err.Error(), `"a[1.jbx"`) || !strings.Contains(err.Error(), "jukebox.json") {
		t.Errorf("a malformed glob: %v, want an error naming the file and the key", err)
	}
}
