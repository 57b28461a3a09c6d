package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestBoothStdinOutside: record --booth with `< task.md` from outside the
// workspace: the agent reads the task, and its writes through
// /proc/self/fd/0 and /dev/stdin leave the file byte-identical.
func TestBoothStdinOutside(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	task := filepath.Join(t.TempDir(), "task.md")
	must(t, os.WriteFile(task, []byte("the task\n"), 0o644))
	in, err := os.Open(task)
	must(t, err)
	defer in.Close()
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "--booth", "--commit", "always", "-o", filepath.Join(t.TempDir(), "s.jbx"),
		"--", "sh", "-c", `echo X >> /proc/self/fd/0; echo Y > /dev/stdin; cat`)
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("record --booth < task.md: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(task); string(b) != "the task\n" {
		t.Errorf("task.md, given as stdin, is now %q", b)
	}
	if !strings.Contains(string(out), "the task") {
		t.Errorf("the agent did not read its stdin: %q", out)
	}
}

// TestBoothStdinFolderRefused: record --booth with a folder as stdin is
// refused before the agent runs (exit 2, naming standard input): the
// agent never gets a descriptor it could write through or climb from.
func TestBoothStdinFolderRefused(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	must(t, os.Mkdir(outside, 0o755))
	dir, err := os.Open(outside)
	must(t, err)
	defer dir.Close()
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "--booth", "--commit", "always", "-o", filepath.Join(t.TempDir(), "d.jbx"),
		"--", "sh", "-c", `echo x > /proc/self/fd/0/pwned; echo x > /proc/self/fd/0/../../climbed`)
	cmd.Stdin = dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage || !strings.Contains(string(out), "standard input") {
		t.Errorf("record --booth < folder: %v, want exit %d naming standard input\n%s", err, ExitUsage, out)
	}
	for _, p := range []string{filepath.Join(outside, "pwned"), filepath.Join(filepath.Dir(base), "climbed")} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the agent wrote %s on the host", p)
		}
	}
}

// TestBoothRunFilesInDevShm: with TMPDIR in /dev/shm, which the booth
// gives the agent its own of (empty), the agent still finds the CA bundle
// and the Node.js preload jukebox wrote for it (in /tmp, whose host side
// shows beneath the booth's); the run's folder is gone after.
func TestBoothRunFilesInDevShm(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	shm, err := os.MkdirTemp("/dev/shm", "jukebox-test-")
	if err != nil {
		testenv.Unavailable(t, fmt.Sprintf("a writable /dev/shm (%v)", err), "run on Linux with /dev/shm mounted")
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	ws := t.TempDir()
	cmd := jukeboxCmd(t.Context(), ws, "record", "--booth", "--commit", "always", "-o", filepath.Join(t.TempDir(), "s.jbx"),
		"--", "sh", "-c", `head -c 27 "$SSL_CERT_FILE"; echo; echo "$SSL_CERT_FILE" > where; `+
			`p=${NODE_OPTIONS#*--require }; p=${p#\"}; p=${p%\"}; test -r "$p" && echo preload`)
	cmd.Env = append(cmd.Env, "TMPDIR="+shm)
	// The agent's output apart from jukebox's own lines, which may land
	// between its pieces in one stream (a CI run saw the booth's notice
	// between the certificate's first line and its end).
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if out := stdout.String(); err != nil || !strings.Contains(out, "-----BEGIN CERTIFICATE-----\n") ||
		!strings.Contains(out, "preload\n") {
		t.Fatalf("record --booth with TMPDIR in /dev/shm: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	where, err := os.ReadFile(filepath.Join(ws, "where"))
	must(t, err)
	if run := filepath.Dir(strings.TrimSpace(string(where))); !strings.HasPrefix(run, "/tmp/jukebox-run-") {
		t.Errorf("the bundle was at %s, not in /tmp", where)
	} else if _, err := os.Lstat(run); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the run's folder %s is still there", run)
	}
}
