package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/internal/tapetest"
)

// checkedIn is the folder of the sample tapes, from this package's folder.
var checkedIn = filepath.Join("..", "..", "..", "testdata", "tapes")

// TestSampleTapesAreFresh generates the sample tapes into a scratch folder
// and compares them, byte for byte, with those checked in: a change to the
// writer or the generator must come with the tapes it makes.
func TestSampleTapesAreFresh(t *testing.T) {
	dir := t.TempDir()
	if err := run(dir); err != nil {
		t.Fatalf("gen: %v", err)
	}
	made, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadDir(checkedIn)
	if err != nil {
		t.Fatal(err)
	}
	names := func(es []os.DirEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	if !slices.Equal(names(made), names(have)) {
		t.Fatalf("testdata/tapes is stale: run go run ./internal/tapegen/gen\ngen makes %v, testdata/tapes holds %v", names(made), names(have))
	}
	for _, name := range names(made) {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(checkedIn, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/tapes is stale: run go run ./internal/tapegen/gen\n%s: checked in %d bytes, gen makes %d different bytes", name, len(got), len(want))
		}
	}
	tapetest.Verify(t, filepath.Join(checkedIn, "agent-run.jbx"))
	tapetest.Verify(t, filepath.Join(checkedIn, "sealed.jbx"))
	tapetest.VerifyTorn(t, filepath.Join(checkedIn, "torn.jbx"))
}

// TestGenRefusesABadTape: a tampered tape that verified would be a sample
// that tests nothing; checkVariants refuses it, and so refuses a torn tape
// that opens whole, before anything is written.
func TestGenRefusesABadTape(t *testing.T) {
	files, _, err := tapes()
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{}
	for name, b := range files {
		bad[name] = b
	}
	bad["tampered.jbx"] = files["agent-run.jbx"]
	if err := checkVariants(bad); err == nil {
		t.Fatal("an untampered tampered.jbx was accepted")
	}
	bad["tampered.jbx"], bad["torn.jbx"] = files["tampered.jbx"], files["agent-run.jbx"]
	if err := checkVariants(bad); err == nil {
		t.Fatal("a torn.jbx that is whole was accepted")
	}
}
