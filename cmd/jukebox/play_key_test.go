package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlayKeyFile: --key-file is read and checked as verify reads it; a
// key of the wrong size is a usage error before the turntable starts.
func TestPlayKeyFile(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short.key")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := jb(t, "play", "--key-file", short, "../../testdata/tapes/sealed.jbx")
	if code != ExitUsage || !strings.Contains(errs, "a seal key is 16 to 64 bytes") {
		t.Fatalf("a 9-byte key: exit %d, %q", code, errs)
	}
	c := &PlayCmd{Tapes: []string{"../../testdata/tapes/sealed.jbx"}, KeyFile: "../../testdata/tapes/seal.key"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(c.KeyFile)
	if string(c.key) != strings.TrimSpace(string(want)) {
		t.Fatalf("key %q, file holds %q", c.key, want)
	}
}
