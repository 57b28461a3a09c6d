//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

func runShell(t *testing.T, tx *Tx, mode Mode, script string) string {
	t.Helper()
	var out bytes.Buffer
	r, err := Shell(tx, ShellOptions{Stdout: &out, Stderr: &out, Mode: mode})
	must(t, err)
	prog, err := syntax.NewParser().Parse(strings.NewReader(script), "test.sh")
	must(t, err)
	if err := r.Run(ctx, prog); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return out.String()
}

func TestShellBuiltinsAndCommandsShareTheView(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	out := runShell(t, tx, ModeCopy, `
echo staged > by-shell.txt
echo more >> by-shell.txt
[ -f by-shell.txt ] && echo builtin-sees-it
cat by-shell.txt
for f in src/*.go; do echo "glob $f"; done
cd src && echo hi > sub.txt && cd ..
mv src/util.go src/moved.go
echo x > /dev/null
`)
	want := "builtin-sees-it\nstaged\nmore\nglob src/main.go\nglob src/util.go\n"
	if out != want {
		t.Fatalf("output %q want %q", out, want)
	}
	if treeHash(t, ws) != before {
		t.Fatal("shell changed the real workspace")
	}
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write by-shell.txt\nwrite src/moved.go\nwrite src/sub.txt\ndelete src/util.go" {
		t.Fatalf("diff:\n%s", got)
	}
	var errb bytes.Buffer
	r, _ := Shell(tx, ShellOptions{Stderr: &errb})
	prog, _ := syntax.NewParser().Parse(strings.NewReader("echo evil > /tmp/jukebox-escape-test"), "")
	if err := r.Run(ctx, prog); err == nil && !strings.Contains(errb.String(), "escapes") {
		t.Fatalf("write outside the workspace allowed: %q", errb.String())
	}
}

// TestShellPipeIntoHead: a pipeline of two commands (cat FILE | head -1)
// hung the control API's shell, and with it the run: the overlay run of
// the first holds the transaction, the second waited for it, and the
// first for the second to read. One is refused saying why (run it as one
// command), the other's writes or reads end as in a shell, and the script
// stops there: going on, `ls out | wc -l` answered 0 with status 0.
func TestShellPipeIntoHead(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"big.txt": strings.Repeat("line\n", 200000)})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	for _, mode := range []Mode{ModeCopy, ModeOverlay} {
		if mode == ModeOverlay && Supported() != nil {
			continue
		}
		done := make(chan string, 1)
		go func() { done <- runShellOut(tx, mode, "cat big.txt | head -1; echo after") }()
		select {
		case out := <-done:
			if !strings.Contains(out, "one command at a time") || strings.HasSuffix(out, "after\n") {
				t.Errorf("%s: output %q, want the refusal and the script stopped", mode, out)
			}
		case <-time.After(2 * time.Minute): // a deadline, not a measure: it hung for ever
			t.Fatalf("%s: cat big.txt | head -1 did not end", mode)
		}
	}
}

// runShellOut is runShell's output, for a goroutine: errors are output.
func runShellOut(tx *Tx, mode Mode, script string) string {
	var out bytes.Buffer
	r, err := Shell(tx, ShellOptions{Stdout: &out, Stderr: &out, Mode: mode})
	if err != nil {
		return err.Error()
	}
	prog, err := syntax.NewParser().Parse(strings.NewReader(script), "test.sh")
	if err != nil {
		return err.Error()
	}
	if err := r.Run(ctx, prog); err != nil {
		out.WriteString(err.Error())
	}
	return out.String()
}

// TestShellReachesNothingOutsideTheWorkspace: the shell runs in this
// process, not in the booth. Its redirections read any path outside the
// workspace as this process (a hostile agent read the booth's key, which
// the booth hides from it, and /proc/self/environ with the secrets --pg
// keeps from it), its test and globs told what the booth hides, and
// `> /dev/stdout` opened this process's own stdout, truncating the
// user's log. Outside the workspace it reaches /dev/null and its own
// streams alone.
func TestShellReachesNothingOutsideTheWorkspace(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "booth.key")
	must(t, os.WriteFile(secret, []byte("the-booth-key"), 0o600))
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	for _, c := range []struct{ script, want string }{
		{"read k < " + secret + "; echo got $k", "escapes the workspace"},
		{"read e < /proc/self/environ; echo got $e", "escapes the workspace"},
		{"[ -e " + secret + " ] && echo got it; echo done", "done"},
		{"for f in " + outside + "/*; do echo got $f; done", outside + "/*"},
		{"echo mine > /dev/stdout; echo err > /dev/stderr; echo x > /dev/null; read n < /dev/null; echo ok", "mine\nerr\nok\n"},
	} {
		var out bytes.Buffer
		r, err := Shell(tx, ShellOptions{Stdout: &out, Stderr: &out, Mode: ModeCopy})
		must(t, err)
		prog, err := syntax.NewParser().Parse(strings.NewReader(c.script), "test.sh")
		must(t, err)
		if err := r.Run(ctx, prog); err != nil {
			fmt.Fprintf(&out, "run: %v\n", err)
		}
		if got := out.String(); strings.Contains(got, "got") && !strings.Contains(got, "got "+outside+"/*") || !strings.Contains(got, c.want) {
			t.Errorf("%s\n  printed %q, want %q and nothing from outside", c.script, got, c.want)
		}
	}
}
