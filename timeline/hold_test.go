package timeline

import (
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapegen"
)

// TestHoldPutsOffClose: a timeline closed while a background read holds
// it stays readable until that read releases it (twice is harmless), and
// is closed then.
func TestHoldPutsOffClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 2, Chunks: 4, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	tl, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	release := tl.Hold()
	if err := tl.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Tape().Frame(0); err != nil {
		t.Fatalf("held and closed: %v", err)
	}
	release()
	release()
	if _, err := tl.Tape().Frame(0); err == nil {
		t.Error("released: the tape is still open")
	}
}
