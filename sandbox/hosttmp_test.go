//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// hostTmpDir is a folder in the host's /tmp (not the test's TMPDIR),
// readable by everyone, removed when the test ends.
func hostTmpDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "jukebox-hosttmp-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	return dir
}

// TestHostTmpBeneath: the host's /tmp is visible in the booth, read-only
// beneath the agent's private writes: a script whose interpreter lives in
// the host's /tmp, outside the workspace, runs (it could not start: the
// booth's /tmp hid the host's), a host file there reads as it is and
// writing it changes only the booth's copy, and nothing the agent wrote
// in /tmp reaches the host or the change set.
func TestHostTmpBeneath(t *testing.T) {
	requireOverlay(t)
	dir := hostTmpDir(t)
	sh, err := os.ReadFile("/bin/sh")
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(dir, "venv", "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "venv", "bin", "sh"), sh, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("#!"+filepath.Join(dir, "venv", "bin", "sh")+"\necho tool-ran\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "data"), []byte("host\n"), 0o644))
	deepSocket(t, dir) // a path over PATH_MAX made the booth refuse to start
	mark := filepath.Base(dir) + ".private"
	t.Cleanup(func() { os.Remove(filepath.Join("/tmp", mark)) })
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	script := fmt.Sprintf(`set -e; D=%q; "$D/tool"; cat "$D/data"; echo changed > "$D/data"; cat "$D/data"; echo new > "$D/new"; echo private > /tmp/%s; cat /tmp/%[2]s`, dir, mark)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out, Notice: io.Discard, Mode: ModeOverlay})
	must(t, err)
	if want := "tool-ran\nhost\nchanged\nprivate\n"; res.ExitCode != 0 || out.String() != want {
		t.Fatalf("exit %d, output %q, want %q", res.ExitCode, out.String(), want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "data")); string(b) != "host\n" {
		t.Errorf("the host's file in /tmp is now %q", b)
	}
	for _, p := range []string{filepath.Join(dir, "new"), filepath.Join("/tmp", mark)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was written on the host", p)
		}
	}
	cs, err := tx.Diff()
	must(t, err)
	if len(cs.Changes) != 0 || len(cs.Refused) != 0 {
		t.Errorf("the change set holds the agent's /tmp: %s", ops(cs))
	}
}

// TestStartFailureSaysWhy: an agent that cannot start in the booth gets a
// message naming the path that was not found and what the booth hides or
// makes its own there (ErrNotStarted), not a word about the agent's model
// calls.
func TestStartFailureSaysWhy(t *testing.T) {
	requireOverlay(t)
	shm, err := os.MkdirTemp("/dev/shm", "jukebox-start-")
	must(t, err)
	defer os.RemoveAll(shm)
	must(t, os.WriteFile(filepath.Join(shm, "agent.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755))
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"run.sh": "#!/nonexistent/bin/python3\nprint('ran')\n"})
	must(t, os.Chmod(filepath.Join(ws, "run.sh"), 0o755))
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{filepath.Join(shm, "agent.sh")}, []string{filepath.Join(shm, "agent.sh"), "/dev/shm is the booth's own"}},
		{[]string{"./run.sh"}, []string{"run.sh", "/nonexistent/bin/python3", "interpreter"}},
		{[]string{"no-such-agent-command"}, []string{"no-such-agent-command", "PATH"}},
	} {
		tx, err := Begin(ws, Options{})
		must(t, err)
		var out bytes.Buffer
		_, err = Exec(ctx, tx, ExecOptions{Args: c.args, Stdout: &out, Stderr: &out, Notice: io.Discard, Mode: ModeOverlay})
		tx.Rollback(ctx)
		if !errors.Is(err, ErrNotStarted) || strings.Contains(out.String(), "ran") {
			t.Errorf("%s: err %v, output %q; want ErrNotStarted", c.args[0], err, out.String())
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.args[0], err, w)
			}
		}
	}
}

// outsideTmp is a new folder outside /tmp (in /var/tmp), readable by
// everyone, removed when the test ends.
func outsideTmp(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "jukebox-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	return base
}

// hostTmpSockets makes a folder in the host's /tmp and three listening
// unix sockets, world-writable: one beside the folder, directly in /tmp
// (as a database server's), one in it (as tmux's or ssh-agent's), one
// deeper; and a file beside it. It returns the folder.
func hostTmpSockets(t *testing.T, mark string) string {
	dir := filepath.Join("/tmp", mark+".hosttmp")
	must(t, os.MkdirAll(filepath.Join(dir, "deep", "er"), 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.WriteFile(dir+".file", []byte("host"), 0o644))
	t.Cleanup(func() { os.Remove(dir + ".file") })
	for _, p := range []string{dir + ".sock", filepath.Join(dir, "S.agent"), filepath.Join(dir, "deep", "er", "sock")} {
		listenUnix(t, p)
	}
	for _, d := range []string{dir, filepath.Join(dir, "deep"), filepath.Join(dir, "deep", "er")} {
		must(t, os.Chmod(d, 0o755))
	}
	return dir
}

// listenUnix listens on a world-writable unix socket at p, accepting and
// closing connections, until the test ends.
func listenUnix(t *testing.T, p string) {
	ln, err := net.Listen("unix", p)
	must(t, err)
	must(t, os.Chmod(p, 0o777))
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// deepSocket makes, in dir, folders 25 deep of 200-byte names (a path
// over PATH_MAX) with a socket at the bottom, and removes them when the
// test ends (os.RemoveAll walks by descriptors).
func deepSocket(t *testing.T, dir string) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	name := strings.Repeat("d", 200)
	for range 25 {
		must(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		must(t, err)
		fd = next
	}
	defer unix.Close(fd)
	must(t, unix.Mknodat(fd, "s", unix.S_IFSOCK|0o777, 0))
}
