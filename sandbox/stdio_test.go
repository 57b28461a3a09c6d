//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stdioBooth is a workspace and, beside it, a folder outside the booth
// holding task.md and log (what a user's `< task.md > log` would name).
func stdioBooth(t *testing.T) (ws, outside string, tx *Tx) {
	t.Helper()
	requireOverlay(t)
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	mkTree(t, outside, map[string]string{"task.md": "the task\n", "log": "earlier\n"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(func() { tx.Rollback(ctx) })
	return ws, outside, tx
}

// TestStdinFileStaysIntact: a file outside the workspace given as the
// agent's stdin is read, never written: reopening its descriptor by
// /proc/self/fd/0 (or /dev/stdin) reaches a pipe jukebox fills, not the
// host's file.
func TestStdinFileStaysIntact(t *testing.T) {
	_, outside, tx := stdioBooth(t)
	task := filepath.Join(outside, "task.md")
	in, err := os.Open(task)
	must(t, err)
	defer in.Close()
	var out bytes.Buffer
	script := `echo X >> /proc/self/fd/0; echo Y > /dev/stdin; printf Z 1<> /proc/self/fd/0; readlink /proc/self/fd/0; cat`
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdin: in, Stdout: &out,
		Stderr: io.Discard, Notice: io.Discard, Mode: ModeOverlay})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v\n%s", err, res, out.String())
	}
	if b, _ := os.ReadFile(task); string(b) != "the task\n" {
		t.Errorf("the stdin file outside the workspace is now %q", b)
	}
	if !strings.Contains(out.String(), "the task\n") {
		t.Errorf("the agent did not read its stdin: %q", out.String())
	}
	if strings.Contains(out.String(), task) {
		t.Errorf("the agent's stdin is the host's file: %q", out.String())
	}
}

// TestStdoutFileIsAppendedOnly: a file given as the agent's stdout gets
// what the agent writes to it, after what it held; the agent cannot
// reopen it to truncate or rewrite it.
func TestStdoutFileIsAppendedOnly(t *testing.T) {
	_, outside, tx := stdioBooth(t)
	logPath := filepath.Join(outside, "log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	defer log.Close()
	script := `echo out; echo gone > /proc/self/fd/1; echo err >&2; echo gone2 > /dev/stderr`
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdin: nil, Stdout: log,
		Stderr: log, Notice: io.Discard, Mode: ModeOverlay})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	b, _ := os.ReadFile(logPath)
	if !strings.HasPrefix(string(b), "earlier\nout\n") || !strings.Contains(string(b), "err\n") {
		t.Errorf("the stdout file is %q, want what it held, then what the agent wrote", b)
	}
}

// TestStdStreamDirectoryRefused: a directory as a standard stream would
// hand the agent a descriptor of the host's tree, read-write and free to
// climb (/proc/self/fd/0/.., openat(0, "../..")): the booth refuses it,
// naming the stream, before the agent runs.
func TestStdStreamDirectoryRefused(t *testing.T) {
	_, outside, tx := stdioBooth(t)
	base := filepath.Dir(outside)
	for _, stream := range []string{"stdin", "stdout"} {
		dir, err := os.Open(outside)
		must(t, err)
		o := ExecOptions{Args: []string{"sh", "-c", `echo x > /proc/self/fd/0/pwned; echo x > /proc/self/fd/0/../climbed; echo x > /proc/self/fd/1/pwned1`},
			Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Notice: io.Discard, Mode: ModeOverlay}
		if stream == "stdin" {
			o.Stdin = dir
		} else {
			o.Stdout = dir
		}
		_, err = Exec(ctx, tx, o)
		dir.Close()
		if !errors.Is(err, ErrStreamDir) || !strings.Contains(err.Error(), "standard") {
			t.Errorf("%s a directory: got %v, want ErrStreamDir naming the stream", stream, err)
		}
		for _, p := range []string{filepath.Join(outside, "pwned"), filepath.Join(outside, "pwned1"), filepath.Join(base, "climbed")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s a directory: the agent wrote %s on the host", stream, p)
				os.Remove(p)
			}
		}
	}
}
