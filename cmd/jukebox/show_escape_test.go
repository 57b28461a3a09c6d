package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestShowDoesNotPassEscapes: output recorded from an agent may hold
// terminal escape sequences; show prints them as pictures, never raw.
func TestShowDoesNotPassEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "esc.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	w.Append(0, tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("\x1b[2J\x1b]0;pwned\x07hello")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	out, _ := wantCode(t, ExitOK, "show", path)
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, "hello") {
		t.Fatalf("show printed %q", out)
	}
}
