package tui

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// writeFork writes a small tape forked from the tape whose chain head is
// parent, at frame at, with overrides; it returns the tape's head.
func writeFork(t *testing.T, path, parent string, at uint64, over string, exit int) string {
	t.Helper()
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		rs := tapefmt.RunStart{Argv: []string{"agent"}}
		if parent != "" {
			rs.Parent = &tapefmt.ParentRef{Tape: parent, Frame: at, Overrides: json.RawMessage(over)}
		}
		w.Append(0, rs)
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "demo-small"})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Model: "demo-small"})
		_, err := w.Append(0, tapefmt.RunEnd{ExitCode: exit})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	return tp.Head().String()
}

// TestForkList: b lists the tape opened and the tapes beside it forked
// from it, and from those (by chain head: an unrelated tape and a file
// that is no tape are left out), as a tree; enter shows a fork beside its
// parent, or the tape opened alone; f on a fork's timeline forks the fork,
// which becomes the parent on screen, and the new fork joins the list
// (the issue: after a second fork the first was gone with no way back,
// and forks started from the first timeline only).
func TestForkList(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "run.jbx")
	raw, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(root, raw, 0o644)
	tp, err := tapefmt.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	head := tp.Head().String()
	tp.Close()
	a := filepath.Join(dir, "run-fork-a.jbx")
	b := filepath.Join(dir, "run-fork-b.jbx")
	aHead := writeFork(t, a, head, 21, `{"model":"demo-large","scope":"all"}`, 0)
	writeFork(t, b, aHead, 1, `{"system_prompt":"be brief","scope":"once"}`, 3)
	writeFork(t, filepath.Join(dir, "other.jbx"), "", 0, "", 0)
	os.WriteFile(filepath.Join(dir, "junk.jbx"), []byte("not a tape"), 0o644)

	o := testOptions()
	var parents []string
	o.PrepareFork = func(fo *engine.ForkOptions) error {
		parents = append(parents, fo.Parent)
		fo.Tape = filepath.Join(dir, "run-fork-c.jbx")
		return nil
	}
	o.Fork = func(context.Context, engine.ForkOptions) (*engine.Result, error) {
		return nil, errors.New("not run in this test")
	}
	d := New([]string{root}, o)
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 140, Height: 30})
	press(d, runes("b"))
	if d.pane != paneForks || len(d.family) != 3 {
		t.Fatalf("b: pane %v, family %+v", d.pane, d.family)
	}
	v := d.View()
	for _, want := range []string{"forks · 3 tapes", "● run.jbx", "the tape opened",
		"└ run-fork-a.jbx  at frame 21 · model demo-large · exit 0 · found beside it",
		"  └ run-fork-b.jbx  at frame 1 · system prompt, that call only · exit 3"} {
		if !strings.Contains(v, want) {
			t.Errorf("the list lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "other.jbx") || strings.Contains(v, "junk.jbx") {
		t.Errorf("the list holds tapes that are no forks:\n%s", v)
	}

	press(d, runes("j"), runes("j"), keyEnter)
	if len(d.tracks) != 2 || d.tracks[0].tl.Path() != a || d.tracks[1].tl.Path() != b || !d.forkShown() || d.tracks[0].forkAt != 1 {
		t.Fatalf("enter on run-fork-b: tracks %v, status %q", trackPaths(d), d.status)
	}
	if !strings.Contains(d.status, "beside its parent") {
		t.Errorf("status %q", d.status)
	}

	// f on the fork's timeline forks the fork.
	d.tracks[1].SetCursor(0)
	press(d, runes("f"))
	if d.pane != paneForm {
		t.Fatalf("f on a fork's timeline: pane %v, status %q", d.pane, d.status)
	}
	press(d, keyEnter)
	if len(parents) != 1 || parents[0] != b || d.tracks[0].tl.Path() != b || d.tracks[0].label != "parent" {
		t.Fatalf("fork of the fork: parents %v, tracks %v", parents, trackPaths(d))
	}
	if i := d.familyIndex(filepath.Join(dir, "run-fork-c.jbx")); i < 0 || d.family[i].parent != b {
		t.Errorf("the new fork is not in the list under its parent: %+v", d.family)
	}
	close(d.run.done)
	d.run.finished = true

	press(d, runes("b"), runes("k"), runes("k"), runes("k"), keyEnter)
	if len(d.tracks) != 1 || d.tracks[0].tl.Path() != root {
		t.Errorf("enter on the tape opened: tracks %v", trackPaths(d))
	}
}

func trackPaths(d *Deck) []string {
	var out []string
	for _, t := range d.tracks {
		out = append(out, t.tl.Path()+" ("+t.label+")")
	}
	return out
}

// TestBaseNameOfAStoreURL: a store tape's name is the name in its path,
// not the end of the endpoint URL in its query.
func TestBaseNameOfAStoreURL(t *testing.T) {
	for in, want := range map[string]string{
		"s3://tapes/demo/run-3f2a.jbx?endpoint=http://127.0.0.1:7070&region=us-east-1": "run-3f2a.jbx",
		"/tmp/tapes/run.jbx": "run.jbx",
		"run.jbx":            "run.jbx",
	} {
		if got := baseName(in); got != want {
			t.Errorf("baseName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestForkListMarksBisect: the fork list names the point of no return
// jukebox bisect --check found of the tape opened (its sidecar's
// bisect.json), among its probes (issue 34 item 4).
func TestForkListMarksBisect(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "run.jbx")
	raw, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(root, raw, 0o644)
	os.MkdirAll(root+".d", 0o755)
	os.WriteFile(filepath.Join(root+".d", "bisect.json"), []byte(`{"probes": {}, "found": {"change": "--model good", "check": "true", "call": 2, "frame": 21, "step": 3}}`), 0o644)
	d := New([]string{root}, testOptions())
	t.Cleanup(d.Close)
	d.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
	press(d, runes("b"))
	if v := d.View(); !strings.Contains(v, "bisect: point of no return after frame 21, model call 2 (--model good)") {
		t.Errorf("the fork list does not mark the bisect:\n%s", v)
	}
}
