package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapestore"
	"github.com/jukebox-os/jukebox/timeline"
)

// fileStore is a store in a fresh folder, with a fresh cache (its tape
// URLs open with Options.Remote: storeOptions).
func fileStore(t *testing.T) *tapestore.Store {
	t.Helper()
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	loc, _ := tapestore.Parse("file://" + t.TempDir() + "/")
	s, err := tapestore.Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeOptions are testOptions that open a store's tapes by their URLs.
func storeOptions() Options {
	o := testOptions()
	o.Remote = tapestore.Opener(false)
	return o
}

// TestStoreTape: a store's tape opens in the turntable by its URL, named by
// the name in its path; the header says what was checked at upload (the
// turntable does not fetch it whole to check it on open), and C runs the
// whole check on demand.
func TestStoreTape(t *testing.T) {
	s := fileStore(t)
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
	o := storeOptions()
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

// TestStoreTapeInBackground: in a running program a store tape's rows and
// frame are fetched in the background: the screen draws the rows not yet
// arrived as "…" and the frame as being fetched, the keys do not wait,
// and the messages that bring them redraw the screen whole.
func TestStoreTapeInBackground(t *testing.T) {
	s := fileStore(t)
	// Steps whose frames lie between 300 KB files: opening brings the
	// first and the last ones only.
	local := filepath.Join(t.TempDir(), "files.jbx")
	_, err := tapetest.WriteSteps(local, tapetest.Steps{Argv: []string{"agent"}, Steps: 12, FileSize: 300_000,
		Request: func(i int) []byte {
			return fmt.Appendf(nil, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"check batch %d"}]}`, i)
		}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(context.Background(), local, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := New([]string{up.URL}, storeOptions())
	t.Cleanup(d.Close)
	msgs := make(chan tea.Msg, 16)
	d.SetSend(func(m tea.Msg) { msgs <- m })
	// The frame view's background reads run when the test says (one for
	// frame 0 would otherwise race the rows' round for the same frames).
	var work []func() tea.Msg
	d.frame.later = func(w func() tea.Msg) { work = append(work, w) }
	// The rows' round waits until the first screen has been drawn.
	drawn := make(chan struct{})
	defer func(f func(*timeline.Timeline, [][2]int) error) { fetchRound = f }(fetchRound)
	fetchRound = func(tl *timeline.Timeline, spans [][2]int) error { <-drawn; return tl.Rows(spans...) }
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 40})
	next := func(want string) tea.Msg {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s came", want)
		}
		return nil
	}
	v := d.View()
	if !strings.Contains(v, "frame 0 of 38") || strings.Contains(v, "write data/3.bin") || !strings.Contains(v, "» …") || d.fetching[d.tracks[0].tl] == nil {
		t.Fatalf("the first screen before the rows arrived:\n%s", v)
	}
	if d.View(); len(msgs) != 0 {
		t.Fatal("a second round was asked for while the first was on its way")
	}
	close(drawn)
	d.Update(next("fetchedMsg"))
	if v = d.View(); !strings.Contains(v, "write data/3.bin") || strings.Contains(v, "  …") {
		t.Fatalf("the first screen once the rows arrived:\n%s", v)
	}
	// The frame view reads a request's body in the background too.
	press(d, runes("g"))
	for _, k := range "25" {
		press(d, runes(string(k)))
	}
	press(d, tea.KeyMsg{Type: tea.KeyEnter})
	if v = d.View(); !strings.Contains(v, "fetching frame 25 from the store…") || len(work) != 1 {
		t.Fatalf("frame 25 before its body arrived (%d reads asked for):\n%s", len(work), v)
	}
	press(d, runes("l")) // on to frame 26 and back before the read for 25 ends
	press(d, runes("h"))
	if len(work) != 3 {
		t.Fatalf("%d reads asked for, want 25's, 26's and 25's again", len(work))
	}
	d.Update(work[1]()) // frame 26's: not the frame shown, dropped
	if v = d.View(); !strings.Contains(v, "fetching frame 25 from the store…") {
		t.Fatalf("frame 25 after frame 26's read came:\n%s", v)
	}
	d.Update(work[0]()) // frame 25's first read: the frame shown
	d.Update(work[2]()) // and its second: nothing left to wait for
	if v = d.View(); !strings.Contains(v, "check batch 8") || strings.Contains(v, "fetching frame") {
		t.Errorf("frame 25 once its body arrived:\n%s", v)
	}

	// A round that fails says why and is not asked again at every redraw.
	var rounds atomic.Int32
	fetchRound = func(*timeline.Timeline, [][2]int) error { rounds.Add(1); return errors.New("the store did not answer") }
	press(d, runes("G"))
	d.View()
	_, cmd := d.Update(next("fetchedMsg"))
	d.View()
	d.View()
	if rounds.Load() != 1 || cmd == nil || !strings.Contains(d.status, "the store did not answer (trying again)") {
		t.Errorf("a failed round: %d rounds, retry %v, status %q", rounds.Load(), cmd != nil, d.status)
	}
}
