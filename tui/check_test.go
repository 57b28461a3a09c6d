package tui

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

const (
	sealedTape = "../testdata/tapes/sealed.jbx"
	sealKey    = "../testdata/tapes/seal.key"
	firstCall  = 2 // the first llm.request of a tapegen run (after run.start and seed)
)

// damagedTape writes a two-step tapegen run as dir/damaged.jbx and flips
// the first stored byte of the first request's body blob: that blob then
// fails its checksum, and so does the second request's body, stored as a
// delta of it. It returns the path and the damaged record's offset.
func damagedTape(t *testing.T) (string, int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "damaged.jbx")
	if err := tapegen.WriteFile(path, tapegen.Spec{Steps: 2, Chunks: 4, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path) // whole, before it is damaged
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tp.Frame(firstCall)
	var p tapefmt.Payload
	if err == nil {
		p, err = f.Decode()
	}
	tp.Close()
	req, ok := p.(*tapefmt.LLMRequest)
	if err != nil || !ok {
		t.Fatalf("frame %d: %T %v", firstCall, p, err)
	}
	return path, tapetest.DamageBlob(t, path, req.Body)
}

// checkedDeck opens paths on a w×h screen with o and runs Init's commands
// (the checks) to the end, as the program would.
func checkedDeck(t *testing.T, o Options, w, h int, paths ...string) *Deck {
	t.Helper()
	d := New(paths, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: w, Height: h})
	runCmd(d, d.Init())
	return d
}

// runCmd runs cmd and its batches, feeding each message back.
func runCmd(d *Deck, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case tea.BatchMsg:
		for _, c := range msg {
			runCmd(d, c)
		}
	case nil, tickMsg, tea.QuitMsg:
	default:
		_, next := d.Update(msg)
		runCmd(d, next)
	}
}

func headerOf(d *Deck) string { return strings.SplitN(d.View(), "\n", 2)[0] }

// TestCheckHeader: the header says checking… while the check runs, then
// what it found.
func TestCheckHeader(t *testing.T) {
	d := newDeck(t, 120, 30, agentRun)
	cmd := d.Init()
	if h := headerOf(d); !strings.HasSuffix(strings.TrimSpace(h), "checking…") {
		t.Fatalf("header while checking: %q", h)
	}
	runCmd(d, cmd)
	if h := headerOf(d); !strings.HasSuffix(strings.TrimSpace(h), "chain ok") || strings.Contains(h, "checking") {
		t.Fatalf("header after the check: %q", h)
	}
	key, err := os.ReadFile(sealKey)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		paths []string
		key   []byte
		want  string
		warn  string
	}{
		{[]string{tornTape}, nil, "⚠ torn", "torn tape torn.jbx"},
		{[]string{sealedTape}, nil, "sealed (not checked)", ""},
		{[]string{sealedTape}, bytes.TrimSpace(key), "seal ✓", ""},
		{[]string{sealedTape}, []byte("a key that did not seal it"), "⚠ seal ✗", "the seal does not match the key"},
		{[]string{agentRun}, bytes.TrimSpace(key), "⚠ seal ✗", "agent-run.jbx is not sealed"},
		{[]string{agentRun, tornTape}, nil, "chain ok", ""},
	}
	for _, c := range cases {
		o := testOptions()
		o.Key = c.key
		d := checkedDeck(t, o, 160, 30, c.paths...)
		h := headerOf(d)
		if !strings.HasSuffix(strings.TrimSpace(h), c.want) {
			t.Errorf("%v key %v: header %q, want it to end in %q", c.paths, c.key != nil, h, c.want)
		}
		if !strings.Contains(d.warn, c.warn) {
			t.Errorf("%v key %v: warning %q, want %q", c.paths, c.key != nil, d.warn, c.warn)
		}
		if len(c.paths) == 2 && !strings.Contains(h, "vs torn.jbx (⚠ torn)") {
			t.Errorf("two tapes: header %q", h)
		}
	}
}

// TestCheckDamaged: a damaged tape says so in the header, on the status
// line, in the timeline's gutter, and in the frame view of the damaged
// frame, which e finds.
func TestCheckDamaged(t *testing.T) {
	path, off := damagedTape(t)
	d := checkedDeck(t, testOptions(), 160, 48, path)
	if h := headerOf(d); !strings.HasSuffix(strings.TrimSpace(h), fmt.Sprintf("⚠ damaged at frame %d", firstCall)) {
		t.Fatalf("header %q", h)
	}
	// Its totals leave out what the damaged frames held: at least that
	// (they read as the run's whole cost, unmarked).
	if h := headerOf(d); !strings.Contains(h, "≥") || !strings.Contains(h, " tok") {
		t.Errorf("header %q: the totals of a damaged tape are not marked as a floor", h)
	}
	if !strings.Contains(d.warn, fmt.Sprintf("frame %d unreadable", firstCall)) || !strings.Contains(d.warn, "(and 1 more frame)") {
		t.Fatalf("warning %q", d.warn)
	}
	press(d, runes("e"))
	if got := d.tracks[0].cursor; got != firstCall {
		t.Fatalf("e went to frame %d, want %d", got, firstCall)
	}
	press(d, runes("e"))
	if got := d.tracks[0].cursor; got == firstCall || d.tracks[0].tl.Row(got).Damage == nil {
		t.Fatalf("the second e went to frame %d", got)
	}
	press(d, runes("E"))
	v := d.View()
	for _, want := range []string{
		fmt.Sprintf("✖ frame %d is damaged", firstCall),
		fmt.Sprintf("at byte offset %d", off),
		"checksum mismatch",
		fmt.Sprintf("context · frame %d · unreadable", firstCall),
		fmt.Sprintf("frame %d · llm.request · ", firstCall), // the frame view's title: it was "frame" alone
		"!  " + fmt.Sprint(firstCall),                       // the error mark in the gutter
	} {
		if !strings.Contains(v, want) {
			t.Errorf("view lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "context · 0 messages") {
		t.Errorf("the damaged call shows an empty context:\n%s", v)
	}
}

// TestDamagedSearchAndFork: a search over the damaged frames says they
// could not be read; the fork form at a damaged call says its system
// prompt is unknown rather than "(none recorded)".
func TestDamagedSearchAndFork(t *testing.T) {
	path, _ := damagedTape(t)
	d := newDeck(t, 120, 40, path)
	press(d, runes("/"))
	typeText(d, "careful coding agent")
	press(d, keyEnter)
	if !strings.Contains(d.status, `no frame holds "careful coding agent"`) ||
		!strings.Contains(d.status, fmt.Sprintf("2 frames unreadable, first frame %d unreadable", firstCall)) {
		t.Fatalf("search status %q", d.status)
	}
	press(d, runes("n"), runes("f"))
	v := d.View()
	if d.pane != paneForm || strings.Contains(v, "(none recorded)") ||
		!strings.Contains(v, fmt.Sprintf("✖ frame %d unreadable", firstCall)) || !strings.Contains(v, "(unknown: the recorded request does not read)") {
		t.Fatalf("fork form:\n%s", v)
	}
}

// TestGoldenCheck renders the check's states: a damaged frame under the
// needle (after e), and a sealed tape checked with the right and a wrong
// key; run with -update to rewrite testdata/TestGoldenCheck/*.golden.
func TestGoldenCheck(t *testing.T) {
	damaged, _ := damagedTape(t)
	key, err := os.ReadFile(sealKey)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		path string
		key  []byte
		keys []tea.KeyMsg
	}{
		{"damaged", damaged, nil, []tea.KeyMsg{runes("e")}},
		{"seal-ok", sealedTape, bytes.TrimSpace(key), nil},
		{"seal-bad", sealedTape, []byte("a key that did not seal it"), nil},
	}
	for _, size := range [][2]int{{40, 12}, {80, 24}, {160, 48}, {200, 60}} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s_%dx%d", c.name, size[0], size[1]), func(t *testing.T) {
				o := testOptions()
				o.Key = c.key
				d := checkedDeck(t, o, size[0], size[1], c.path)
				press(d, c.keys...)
				golden.RequireEqual(t, d.View())
			})
		}
	}
}

// TestDamagedFrameTitle: a frame whose own record does not read (a flipped
// byte in its payload) had the frame view titled "frame" alone: no
// number, kind or time, which the index still knows.
func TestDamagedFrameTitle(t *testing.T) {
	src, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "flipped.jbx")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := tp.Len() / 2
	f, err := tp.Frame(bad)
	tp.Close()
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(src[f.Offset:], f.Payload)
	if at < 0 {
		t.Fatalf("frame %d's payload is not in its record", bad)
	}
	src[f.Offset+int64(at+len(f.Payload)/2)] ^= 0x01
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 160, 48, path)
	press(d, runes("g"))
	typeText(d, fmt.Sprint(bad))
	press(d, keyEnter)
	if v := d.View(); !strings.Contains(v, fmt.Sprintf("frame %d · %s · ", bad, f.Kind)) || !strings.Contains(v, "does not read") {
		t.Errorf("the damaged frame's view:\n%s", v)
	}
}
