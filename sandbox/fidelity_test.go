//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"golang.org/x/sys/unix"
)

// fidelityTime is when every fixture entry was last modified.
var fidelityTime = time.Date(2005, 6, 1, 12, 0, 0, 0, time.UTC)

// fidelityFixture builds the workspace the fidelity script runs in: the
// same, to the nanosecond, every time it is called.
func fidelityFixture(t *testing.T, root string) {
	t.Helper()
	mkTree(t, root, map[string]string{
		"written.txt": "v1\n", "old.txt": "old\n", "plain.txt": "plain\n", "tagged.txt": "tagged\n",
		"ro.txt": "ro\n", "old2.txt": "old2\n", "src/tool": "#!/bin/sh\n", "src/gone.txt": "gone\n",
		"src/same.txt": "same\n", "keep/k.txt": "k\n", "dir2/": "", "setgid/": "",
	})
	must(t, unix.Setxattr(filepath.Join(root, "tagged.txt"), "user.tag", []byte("t"), 0))
	must(t, unix.Setxattr(filepath.Join(root, "written.txt"), "user.kept", []byte("w"), 0))
	must(t, os.Chmod(filepath.Join(root, "src/tool"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "ro.txt"), 0o444))
	must(t, os.Chmod(filepath.Join(root, "setgid"), os.ModeSetgid|0o775))
	// Times last, deepest first, so that nothing made after changes them.
	var paths []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != root {
			paths = append(paths, p)
		}
		return err
	})
	for i := len(paths) - 1; i >= 0; i-- {
		must(t, os.Chtimes(paths[i], fidelityTime, fidelityTime))
	}
}

// fidelityScript makes one change of every kind a plain run can leave
// that the booth used to lose or get wrong: setuid, setgid and sticky
// bits on new and existing files and directories, xattr-only and
// mtime-only changes, an xattr removed, a read-only file's xattrs, new
// files with xattrs, hard links (between new names, and to an existing
// file left unchanged), directory times set and changed by entries, and
// writes over copied-up files (which carry overlayfs's origin).
const fidelityScript = `set -e
py() { "$PY" -c "import os, sys; $1"; }
echo new > new.txt
chmod 4755 new.txt
py "os.setxattr('new.txt', 'user.y', b'2')"
ln new.txt new-link
chmod g+s src/tool
mkdir shared && chmod 1777 shared
chmod +t keep
touch -d '2001-01-01 01:02:03.456789' old.txt
py "os.setxattr('plain.txt', 'user.x', b'1')"
py "os.removexattr('tagged.txt', 'user.tag')"
py "os.setxattr('keep', 'user.d', b'3')"
chmod 644 ro.txt && py "os.setxattr('ro.txt', 'user.r', b'4')" && chmod 444 ro.txt
echo v2 > written.txt && chmod 444 written.txt
ln old2.txt old2-link
echo x > dir2/f && touch -d 2002-02-02 dir2
mkdir -p deep/er && echo d > deep/er/f && touch -d 2003-03-03 deep/er deep
echo g > setgid/g
rm src/gone.txt
ln -s new.txt sym
touch -h -d 2004-04-04 sym
`

// TestCommitFidelity runs one agent script twice: plainly, in a copy of
// the workspace, and in the booth (the kernel overlay), then commits. The
// two trees must be the same by content, mode (setuid, setgid and sticky
// included), link target, extended attributes, hard links and the
// modification times the fixture or the agent set; and no committed
// entry carries an overlayfs attribute.
func TestCommitFidelity(t *testing.T) {
	requireOverlay(t)
	py := testenv.RequirePython(t)
	env := append(os.Environ(), "PY="+py)

	plain := t.TempDir()
	fidelityFixture(t, plain)
	cmd := exec.Command("sh", "-c", fidelityScript)
	cmd.Dir, cmd.Env = plain, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plain run: %v\n%s", err, out)
	}

	ws := t.TempDir()
	fidelityFixture(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", fidelityScript}, Env: env, Stdout: &out, Stderr: &out, Mode: ModeOverlay, Notice: &bytes.Buffer{}})
	must(t, err)
	if res.ExitCode != 0 || res.Mode != ModeOverlay {
		t.Fatalf("booth run: exit %d, mode %s\n%s", res.ExitCode, res.Mode, out.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	if len(cs.Refused) > 0 {
		t.Fatalf("refused: %v", cs.Refused)
	}
	t.Logf("change set:\n%s", cs.String())
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	want, got := snapTree(t, plain), snapTree(t, ws)
	if d := diffSnaps(want, got); d != "" {
		t.Errorf("committed tree differs from a plain run (- plain, + booth):\n%s\nplain:\n%s", d, strings.Join(want, "\n"))
	}
	if bad := overlayXattrsUnder(t, ws); len(bad) > 0 {
		t.Errorf("overlayfs attributes reached the workspace:\n%s", strings.Join(bad, "\n"))
	}
}

// fidelityCopyScript is fidelityScript less what the copy fallback does
// not stage: hard links (refused there), extended attributes of
// directories, and directory times (its fold stages in-place writes as
// new entries, so their directories get the run's time).
const fidelityCopyScript = `set -e
py() { "$PY" -c "import os, sys; $1"; }
echo new > new.txt
chmod 4755 new.txt
py "os.setxattr('new.txt', 'user.y', b'2')"
chmod g+s src/tool
mkdir shared && chmod 1777 shared
chmod +t keep
touch -d '2001-01-01 01:02:03.456789' old.txt
py "os.setxattr('plain.txt', 'user.x', b'1')"
py "os.removexattr('tagged.txt', 'user.tag')"
chmod 644 ro.txt && py "os.setxattr('ro.txt', 'user.r', b'4')" && chmod 444 ro.txt
echo v2 > written.txt && chmod 444 written.txt
echo g > setgid/g
rm src/gone.txt
ln -s new.txt sym
touch -h -d 2004-04-04 sym
`

// TestCommitFidelityCopy is TestCommitFidelity for the copy fallback,
// with the script it can stage (fidelityCopyScript); directory times are
// not compared.
func TestCommitFidelityCopy(t *testing.T) {
	py := testenv.RequirePython(t)
	env := append(os.Environ(), "PY="+py)
	plain := t.TempDir()
	fidelityFixture(t, plain)
	cmd := exec.Command("sh", "-c", fidelityCopyScript)
	cmd.Dir, cmd.Env = plain, env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plain run: %v\n%s", err, out)
	}
	ws := t.TempDir()
	fidelityFixture(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", fidelityCopyScript}, Env: env, Stdout: &out, Stderr: &out, Mode: ModeCopy, Notice: &bytes.Buffer{}})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("booth run: exit %d\n%s", res.ExitCode, out.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	t.Logf("change set:\n%s", cs.String())
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	noDirTimes := func(lines []string) []string {
		for i, l := range lines {
			if _, mode, _ := strings.Cut(l, " "); strings.HasPrefix(mode, "d") {
				lines[i] = l[:strings.LastIndex(l, " mtime=")]
			}
		}
		return lines
	}
	want, got := noDirTimes(snapTree(t, plain)), noDirTimes(snapTree(t, ws))
	if d := diffSnaps(want, got); d != "" {
		t.Errorf("committed tree differs from a plain run (- plain, + booth):\n%s", d)
	}
}
