package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestAutoNameNeverOverwrites: a tape name jukebox chose that is taken
// (another run started the same millisecond) moves to the next free one;
// a name the user gave is never overwritten nor moved.
func TestAutoNameNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jbx")
	if err := os.WriteFile(path, []byte("another run's tape"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "run-2.jbx"), []byte("a third"), 0o644)
	var told string
	o := engine.RunOptions{Argv: []string{"true"}, Dir: dir, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{},
		AutoName: true, OnTape: func(p string) { told = p }}
	res, err := engine.Record(context.Background(), engine.RecordOptions{RunOptions: o, Tape: path})
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "run-3.jbx")
	if res.Tape != want || told != want {
		t.Errorf("tape %q, told %q; want %s", res.Tape, told, want)
	}
	if b, _ := os.ReadFile(path); string(b) != "another run's tape" {
		t.Errorf("the existing tape was overwritten")
	}
	o.AutoName = false
	if _, err := engine.Record(context.Background(), engine.RecordOptions{RunOptions: o, Tape: path}); err == nil {
		t.Errorf("a tape the user named, already there: no error")
	}
}
