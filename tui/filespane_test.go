package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// writeBoothTape writes a booth run of two model calls: the snapshot
// holds notes.md and old.txt; before call 1 the agent writes notes.md
// (its first edit) and new.py, before call 2 it edits notes.md again and
// deletes old.txt; the change set at the end holds the final state.
func writeBoothTape(t testing.TB) string {
	t.Helper()
	return writeBoothTapeOf(t, []string{"python", "agent.py"})
}

// writeBoothTapeOf is writeBoothTape of a run of the command argv.
func writeBoothTapeOf(t testing.TB, argv []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "workspace.jbx")
	clock := time.Duration(0)
	w, err := tapefmt.Create(path, tapefmt.Options{Sync: tapefmt.SyncNever, Now: func() time.Duration { clock += 5 * time.Millisecond; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	blob := func(s string) tapefmt.Hash {
		h, err := w.PutBlob("file", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	app := func(p tapefmt.Payload) {
		if _, err := w.Append(0, p); err != nil {
			t.Fatal(err)
		}
	}
	app(tapefmt.RunStart{Argv: argv, Mode: "record", Cwd: "/work/ws"})
	app(tapefmt.TxBegin{Tx: "tx1", Workspace: "/nonexistent/ws"})
	app(tapefmt.Snapshot{Tx: "tx1", Workspace: "/nonexistent/ws", Part: 1, Parts: 1, Files: []tapefmt.SnapshotEntry{
		{Path: "notes.md", Type: "file", Mode: 0o644, Body: blob("# notes\nfirst line\n")},
		{Path: "old.txt", Type: "file", Mode: 0o644, Body: blob("old\n")}}})
	req := blob(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"go on"}]}`)
	call := func(n uint64) {
		app(tapefmt.LLMRequest{Call: n, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: req, Model: "gpt-4o-mini"})
		resp, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": "done"}}}})
		app(tapefmt.LLMResponse{Call: n, Status: 200, Body: blob(string(resp)), Model: "gpt-4o-mini", Usage: tapefmt.Usage{Input: 10, Output: 2}})
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "new.py", Mode: 0o644, Body: blob("print('hi')\n"), Size: 12, Step: 1})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.md", Mode: 0o644, Body: blob("# notes\nfirst line\nsecond line\n"), Size: 31, Step: 1})
	call(0)
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.md", Mode: 0o644, Body: blob("# notes\nthird line\n"), Size: 19, Step: 2})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpDelete, Path: "old.txt", Step: 2})
	call(1)
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "new.py", Mode: 0o644, Body: blob("print('hi')\n"), Size: 12})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.md", Mode: 0o644, Body: blob("# notes\nthird line\n"), Size: 19})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpDelete, Path: "old.txt"})
	app(tapefmt.TxRollback{Tx: "tx1", Reason: "commit policy never"})
	app(tapefmt.RunEnd{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFilesPaneAtTheNeedle: W shows the files the agent had changed by
// the needle, each with its content there as a diff from the start: at
// the first call notes.md has its first edit, at the second its second
// and old.txt is gone; esc closes the pane.
func TestFilesPaneAtTheNeedle(t *testing.T) {
	d := newDeck(t, 100, 40, writeBoothTape(t))
	press(d, runes("n"), runes("W")) // the first call
	v := d.View()
	for _, want := range []string{"files at frame 5", "2 paths changed", "new.py", "+second line", "+print('hi')"} {
		if !strings.Contains(v, want) {
			t.Fatalf("at call 1 the files pane lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "third line") || strings.Contains(v, "old.txt") {
		t.Fatalf("at call 1 the files pane shows a later change:\n%s", v)
	}
	press(d, keyEsc, runes("n"), runes("n"), runes("W")) // the second call
	v = d.View()
	for _, want := range []string{"3 paths changed", "delete   old.txt", "+third line", "-first line"} {
		if !strings.Contains(v, want) {
			t.Fatalf("at call 2 the files pane lacks %q:\n%s", want, v)
		}
	}
	press(d, keyEsc)
	if d.pane != paneTracks {
		t.Fatalf("esc left pane %v", d.pane)
	}
	d2 := newDeck(t, 100, 40, agentRun)
	press(d2, runes("W"))
	if v := d2.View(); !strings.Contains(v, "no booth run") {
		t.Fatalf("a tape outside the booth:\n%s", v)
	}
}

// TestFilesPaneWithoutAStart: on a tape without a snapshot whose run
// committed its changes, the recorded folder holds the committed files,
// not what the run found: the pane must not compare a file with them
// ("same content as at the start" for a file the agent made), but say
// the start is not known and show the file as it stood at the needle.
func TestFilesPaneWithoutAStart(t *testing.T) {
	folder := t.TempDir()
	if err := os.WriteFile(filepath.Join(folder, "notes.txt"), []byte("v1\nv2\n"), 0o644); err != nil { // committed
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "nosnap.jbx")
	w, err := tapefmt.Create(path, tapefmt.Options{Sync: tapefmt.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	app := func(p tapefmt.Payload) {
		if _, err := w.Append(0, p); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := w.PutBlob("file", []byte("v1\n"))
	last, _ := w.PutBlob("file", []byte("v1\nv2\n"))
	req, _ := w.PutBlob("req", []byte(`{"model":"gpt-4o-mini","messages":[]}`))
	app(tapefmt.RunStart{Argv: []string{"./agent.sh"}, Mode: "record", Cwd: folder})
	app(tapefmt.TxBegin{Tx: "tx1", Workspace: folder})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.txt", Mode: 0o644, Body: first, Size: 3, Step: 1})
	app(tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: req, Model: "gpt-4o-mini"})
	app(tapefmt.LLMResponse{Call: 0, Status: 200, Model: "gpt-4o-mini"})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.txt", Mode: 0o644, Body: last, Size: 6, Step: 2})
	app(tapefmt.FileChange{Tx: "tx1", Op: tapefmt.OpWrite, Path: "notes.txt", Mode: 0o644, Body: last, Size: 6})
	app(tapefmt.TxCommit{Tx: "tx1", Changes: 1})
	app(tapefmt.RunEnd{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	d := newDeck(t, 120, 40, path)
	for _, c := range []struct {
		frame string
		want  []string
	}{{"2", []string{"\nv1 "}}, {"7", []string{"\nv1 ", "\nv2 "}}} {
		press(d, runes("g"))
		press(d, runes(c.frame), keyEnter, runes("W"))
		v := d.View()
		if strings.Contains(v, "same content as at the start") || strings.Contains(v, "+v1") {
			t.Fatalf("frame %s: the pane compares notes.txt with the folder as if it were the run's start:\n%s", c.frame, v)
		}
		if c.frame == "2" && strings.Contains(v, "\nv2 ") {
			t.Fatalf("frame 2 shows notes.txt as a later frame has it:\n%s", v)
		}
		for _, want := range append([]string{"its start is not known"}, c.want...) {
			if !strings.Contains(v, want) {
				t.Fatalf("frame %s: the pane lacks %q:\n%s", c.frame, want, v)
			}
		}
		press(d, keyEsc)
	}
}

// TestFilesPaneTmux: in a real terminal, W on the second call of a booth
// tape shows the workspace there (notes.md's second edit, old.txt gone),
// and esc goes back to the timeline.
func TestFilesPaneTmux(t *testing.T) {
	t.Parallel()
	testenv.RequireTmux(t)
	testenv.Short(t, "runs the binary in tmux")
	bin := filepath.Join(testenv.Binaries(t), "jukebox")
	tape := writeBoothTape(t)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("jukebox-files-%d", os.Getpid()), name: "play"}
	t.Cleanup(func() { s.tmux("kill-server") })
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", "100", "-y", "30",
		fmt.Sprintf("env NO_COLOR= %s play %s", bin, tape)); err != nil {
		t.Fatalf("tmux new-session: %v %s", err, out)
	}
	s.waitScreen("JUKEBOX", "q quit")
	s.keys("n", "n", "n")
	s.waitScreen("frame 10 of 18")
	s.keys("W")
	s.waitScreen("files at frame 10", "delete   old.txt", "+third line")
	s.keys("Escape")
	s.waitScreen("timeline · workspace.jbx · frame 10 of 18")
}

// TestFilesPaneGetsPastALargeFile: a file of 40,000 lines came whole in
// the pane, with no way past it but a thousand pages down. A file's lines
// are cut at maxSectionLines, saying how many more its frame holds, and n
// and N go from file to file, g and G to the top and the end.
func TestFilesPaneGetsPastALargeFile(t *testing.T) {
	big := capSection("── write big.txt ──\n" + strings.Repeat("+line\n", 1000))
	if n := strings.Count(big, "\n"); n > maxSectionLines+1 || !strings.Contains(big, "801 more lines of this file") {
		t.Fatalf("a section of 1,001 lines cut to %d:\n%s", n, big[len(big)-200:])
	}
	d := newDeck(t, 100, 40, writeBoothTape(t))
	text := "  write big.txt\n  write small.txt\n\n" + big + "\n── write small.txt ──\n+x\n"
	d.files.SetSize(100, 20)
	d.files.ready(filesReadyMsg{frame: 5, changed: 2, text: text})
	lines := strings.Split(text, "\n")
	at := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		return -1
	}
	d.files.update(runes("n"))
	if got := d.files.vp.YOffset; got != at("── write big.txt") {
		t.Errorf("n: at line %d, want the first file's %d", got, at("── write big.txt"))
	}
	d.files.update(runes("n"))
	if got := d.files.vp.YOffset; got != at("── write small.txt") && !d.files.vp.AtBottom() {
		t.Errorf("n again: at line %d, want the second file's %d", got, at("── write small.txt"))
	}
	d.files.update(runes("g"))
	if d.files.vp.YOffset != 0 {
		t.Errorf("g: at line %d", d.files.vp.YOffset)
	}
}
