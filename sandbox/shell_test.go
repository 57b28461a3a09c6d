//go:build linux

package sandbox

import (
	"bytes"
	"strings"
	"testing"

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
