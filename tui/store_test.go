package tui

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// TestStoreTape: a store's tape opens in the turntable by its URL, named by
// the name in its path; the header says what was checked at upload (the
// turntable does not fetch it whole to check it on open), and C runs the
// whole check on demand.
func TestStoreTape(t *testing.T) {
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	root := t.TempDir()
	loc, _ := tapestore.Parse("file://" + root + "/")
	s, err := tapestore.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, _ := os.ReadFile(agentRun)
	local := filepath.Join(t.TempDir(), "run.jbx")
	os.WriteFile(local, b, 0o644)
	// Its markers travel with it: uploaded beside it, read from there.
	if err := timeline.SaveMarkers(local, []timeline.Marker{{Frame: 2, Note: "look here"}}); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(context.Background(), local, nil)
	if err != nil {
		t.Fatal(err)
	}
	tapefmt.SetRemoteOpener(tapestore.Opener(false))
	t.Cleanup(func() {
		tapefmt.SetRemoteOpener(func(string) (io.ReaderAt, int64, io.Closer, bool, error) { return nil, 0, nil, false, nil })
	})
	o := testOptions()
	o.KeepMarkers = true
	o.Verified = func(path string) (string, bool) { return "verified at upload 2026-12-04", false }
	d := New([]string{up.URL}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	drain(d, d.Init())
	v := d.View()
	if d.openErr != nil || !strings.Contains(v, "JUKEBOX ▸ "+up.Key) || !strings.Contains(v, "verified at upload 2026-12-04") {
		t.Fatalf("the store's tape in the turntable (%v):\n%s", d.openErr, v)
	}
	if tr := d.tracks[0]; !tr.markers[2] || tr.notes[2] != "look here" || tr.markersErr != nil {
		t.Errorf("the markers uploaded with the tape: %v, notes %v, %v", tr.markers, tr.notes, tr.markersErr)
	}
	// A marker lasts the session: no folder named after the URL appears.
	press(d, runes("m"))
	if !d.tracks[0].markers[0] || !strings.Contains(d.status, "markers kept for this session only") {
		t.Errorf("m on a store's tape: status %q", d.status)
	}
	if _, err := os.Stat("file:"); err == nil {
		os.RemoveAll("file:")
		t.Error("a marker on a store's tape made a folder named after its URL")
	}
	press(d, runes("C"))
	if c := d.checks[d.tracks[0].tl]; c == nil || c.running || c.result == nil {
		t.Fatalf("C did not check the tape: %+v, status %q", c, d.status)
	}
	if text, bad := d.checkText(d.tracks[0].tl); text != "chain ok" || bad {
		t.Errorf("after C the header says %q", text)
	}
	press(d, runes("C"))
	if !strings.Contains(d.status, "checked already") { // the key says why it does nothing
		t.Errorf("C again: %q", d.status)
	}

	// b looks for its forks in the store, from the summary objects.
	fork := filepath.Join(t.TempDir(), "run-fork.jbx")
	writeFork(t, fork, d.tracks[0].tl.Tape().Head().String(), 5, `{"model":"demo-small","scope":"all"}`, 0)
	upFork, err := s.Upload(context.Background(), fork, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.o.StoreKin = tapestore.Kin
	press(d, runes("b"))
	if i := d.familyIndex(upFork.URL); i < 0 || d.family[i].at != 5 || d.family[i].state != "exit 0" || d.forks.note != "" {
		t.Errorf("b on a store's tape: family %+v, note %q", d.family, d.forks.note)
	}
}
