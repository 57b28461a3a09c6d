package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// spoofer stages a git hook, then prints a fake question that lists one
// harmless change and conceals (SGR 8) all that follows: the real
// question, which lists the hook.
const spoofer = `mkdir -p .git/hooks && printf '#!/bin/sh\necho pwned\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit
printf '\nThe agent staged 1 change: 1 write\n  write notes.txt\nCommit them to the workspace? [y/N] \033[8m\033[?25l\033[?1049h\033[5;6r'`

// theQuestion is asked once the real question, which lists the hook, was.
var theQuestion = regexp.MustCompile(`(?s)pre-commit.*Commit them[^\n]*: $|(?s)pre-commit.*Commit them[^\n]*\[y/N\] $`)

// TestBoothQuestionNotSpoofed: an agent's output cannot hide the booth's
// question nor answer it. Before, no reset preceded the question, the
// concealed question listed the hook unseen, and the y typed for the
// agent's fake committed it. Now the terminal is reset (SGR, cursor,
// alternate screen, scroll region) after the agent's output and before
// the question, which follows a separator; a change set with a sensitive
// entry commits only on the code the question shows, and a y keeps it
// staged, nothing applied, nothing discarded.
func TestBoothQuestionNotSpoofed(t *testing.T) {
	requireConfinedBooth(t)
	t.Parallel()
	ws := t.TempDir()
	tape := filepath.Join(t.TempDir(), "spoof.jbx")
	j := startPTY(t, ws, 60*time.Second, "record", "-o", tape, "--booth", "--", "sh", "-c", spoofer)
	j.waitFor(theQuestion)
	j.typeIn("y\n")
	j.exit()
	out := j.output()
	if exists(ws, ".git/hooks/pre-commit") {
		t.Fatalf("the y meant for the agent's fake question committed the hook:\n%q", out)
	}
	conceal := strings.LastIndex(out, "\x1b[8m")
	onTTY := strings.ReplaceAll(termReset, "\n", "\r\n") // the terminal's output processing (onlcr)
	reset := conceal + strings.Index(out[conceal+1:], onTTY) + 1
	question := strings.LastIndex(out, "The agent staged")
	if conceal < 0 || reset <= conceal || question < reset {
		t.Errorf("conceal at %d, reset at %d, question at %d: want the reset between them:\n%q", conceal, reset, question, out)
	}
	if sep := strings.Index(out, questionRule); sep < reset || sep > question {
		t.Errorf("no separator between the reset and the question:\n%q", out)
	}
	if !strings.Contains(out, "jukebox booth commit") || openTx(t, ws) == "" {
		t.Fatalf("a wrong answer did not keep the transaction open:\n%q", out)
	}
	runBoothCLI(t, "booth", "rollback", "-C", ws)

	// The code the question shows commits.
	j = startPTY(t, ws, 60*time.Second, "record", "-o", filepath.Join(t.TempDir(), "code.jbx"), "--booth", "--", "sh", "-c", spoofer)
	j.waitFor(theQuestion)
	m := regexp.MustCompile(`type the code ([A-Z0-9]{4}-[A-Z0-9]{4})`).FindAllStringSubmatch(j.output(), -1)
	if len(m) == 0 {
		t.Fatalf("no code in the question:\n%q", j.output())
	}
	j.typeIn(strings.ToLower(m[len(m)-1][1]) + "\n")
	if code := j.exit(); code != ExitOK || !exists(ws, ".git/hooks/pre-commit") {
		t.Fatalf("exit %d, the code did not commit:\n%q", code, j.output())
	}
}

// TestBoothQuestionUndecided: at the question, Ctrl-C, Ctrl-\, SIGTERM
// and the end of input (Ctrl-D) keep the transaction open: nothing
// applied, nothing discarded, and the message says how to go on. Before,
// Ctrl-C, Ctrl-\ and SIGTERM were ignored and Ctrl-D rolled back.
func TestBoothQuestionUndecided(t *testing.T) {
	requireConfinedBooth(t)
	t.Parallel()
	for _, c := range []struct {
		name string
		keys string
		code int
	}{
		{"ctrl-c", "\x03", ExitInterrupted},
		{"ctrl-backslash", "\x1c", ExitInterrupted},
		{"sigterm", "", ExitInterrupted},
		{"eof", "\x04", ExitOK},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			j := startPTY(t, ws, 30*time.Second, "record", "-o", filepath.Join(t.TempDir(), "q.jbx"), "--booth", "--",
				"sh", "-c", "echo made > made.txt")
			j.waitFor(regexp.MustCompile(`Commit them[^\n]*(\] |: )$`))
			if c.keys == "" {
				j.cmd.Process.Signal(syscall.SIGTERM)
			} else {
				j.typeIn(c.keys)
			}
			code := j.exit()
			out := j.output()
			if exists(ws, "made.txt") || openTx(t, ws) == "" {
				t.Fatalf("not kept open (made.txt committed: %v):\n%q", exists(ws, "made.txt"), out)
			}
			if code != c.code || !strings.Contains(out, "jukebox booth commit") {
				t.Errorf("exit %d, want %d, and the command to go on:\n%q", code, c.code, out)
			}
		})
	}
}
