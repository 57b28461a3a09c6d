package tapegen

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
)

// TestCheckRefusesWhatDoesNotRead: the tape Bytes makes checks; the same
// bytes with one byte of a blob flipped, or cut short, do not.
func TestCheckRefusesWhatDoesNotRead(t *testing.T) {
	b, err := Bytes(Spec{Steps: 2, Chunks: 4, Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b); err != nil {
		t.Fatal(err)
	}
	if err := CheckTorn(b); err == nil {
		t.Error("CheckTorn accepted a whole tape")
	}
	flipped := append([]byte(nil), b...)
	flipped[len(b)/2] ^= 0x20
	if err := Check(flipped); err == nil {
		t.Error("Check accepted a tape with a byte flipped")
	}
	if err := Check(b[:len(b)-10]); err == nil {
		t.Error("Check accepted a tape without its footer")
	}
}

// TestWriteFile writes a tape that verifies, and never over another file.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	if err := WriteFile(path, Spec{Steps: 3, Chunks: 5, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	before, _ := os.ReadFile(path)
	if err := WriteFile(path, Spec{Steps: 1, Chunks: 1, Model: "m"}); err == nil {
		t.Fatal("WriteFile wrote over an existing tape")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused WriteFile changed the file")
	}
}
