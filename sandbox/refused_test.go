//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// These tests cover the change set that is never lost: a symlink is
// data, and an entry the booth cannot commit is refused alone, listed
// with its reason, while the rest of the change set stays whole.

// refusals formats the refused entries as "kind path" lines.
func refusals(cs ChangeSet) string {
	var b []string
	for _, r := range cs.Refused {
		b = append(b, string(r.Kind)+" "+r.Path)
	}
	return strings.Join(b, "\n")
}

// TestSymlinksAreData: a venv's absolute links, `ln -s .. up` and a
// dangling link are staged with their targets as given and committed as
// the links themselves; nothing they point at is touched.
func TestSymlinksAreData(t *testing.T) {
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("outside"), 0o644))
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "olddir/x": "x"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	links := map[string]string{
		".venv/bin/python":  "/usr/bin/python3", // python -m venv
		".venv/bin/python3": "python",
		".venv/lib64":       "lib",
		"up":                "..",
		"dangling":          "no/such/file",
		"out":               outside,
		"olddir":            outside, // a real directory replaced by a link out
		".bashrc":           "dotfiles/bashrc",
	}
	must(t, tx.Files().MkdirAll(".venv/bin", 0o755))
	must(t, tx.Files().Mkdir(".venv/lib", 0o755))
	must(t, tx.Files().RemoveAll("olddir"))
	for name, target := range links {
		must(t, tx.Files().Symlink(target, name))
	}
	// Staging through a link that leads out is still refused.
	for _, p := range []string{"up/x", "out/f", "olddir/x"} {
		if err := tx.Files().WriteFile(p, []byte("no"), 0o644); err == nil {
			t.Errorf("write %s through a staged symlink out was staged", p)
		}
	}
	cs, err := tx.Diff()
	must(t, err)
	if len(cs.Refused) != 0 {
		t.Fatalf("refused: %v", cs.Refused)
	}
	got := map[string]string{}
	for _, c := range cs.Changes {
		if c.Op == OpSymlink {
			got[c.Path] = c.Target
		}
	}
	for name, target := range links {
		if got[name] != target {
			t.Errorf("diff: %s -> %q, want %q", name, got[name], target)
		}
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	for name, target := range links {
		fi, err := os.Lstat(filepath.Join(ws, name))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("committed %s is not a symlink: %v %v", name, fi, err)
			continue
		}
		if got, _ := os.Readlink(filepath.Join(ws, name)); got != target {
			t.Errorf("committed %s -> %q, want %q", name, got, target)
		}
	}
	ents, _ := os.ReadDir(outside)
	if b, _ := os.ReadFile(filepath.Join(outside, "f")); string(b) != "outside" || len(ents) != 1 {
		t.Errorf("a committed link was followed: outside holds %v", ents)
	}
	// And once real, a link out still carries no write out.
	tx2, err := Begin(ws, Options{})
	must(t, err)
	defer tx2.Rollback(ctx)
	if err := tx2.Files().WriteFile("out/g", []byte("no"), 0o644); err == nil {
		t.Error("write through a committed link out was staged")
	}
}

// TestSymlinksPlantedAreData: links a child leaves in the upper directory
// (the kernel overlay's work) are recorded and committed the same way.
func TestSymlinksPlantedAreData(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	up := filepath.Join(tx.StateDir(), "upper")
	must(t, os.Symlink("/etc/shadow", filepath.Join(up, "abs")))
	must(t, os.Symlink("../../../../../x", filepath.Join(up, "rel")))
	cs, err := tx.Diff()
	must(t, err)
	if ops(cs) != "symlink abs\nsymlink rel" || len(cs.Refused) != 0 {
		t.Fatalf("diff %s, refused %v", ops(cs), cs.Refused)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	if got, _ := os.Readlink(filepath.Join(ws, "rel")); got != "../../../../../x" {
		t.Fatalf("rel -> %q", got)
	}
}

// plantSocket leaves a unix socket file at p.
func plantSocket(p string) error {
	l, err := net.Listen("unix", p)
	if err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	return err
}

// TestRefusedKeepsTheRest: a fifo, a socket, a device and a hard link to
// a file outside the staging area are each refused, with a reason; the
// writes beside them (a pair of names of one new file among them) stay
// in the change set and commit.
func TestRefusedKeepsTheRest(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	must(t, os.WriteFile(secret, []byte("s"), 0o644))
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "keep.txt": "k"})
	before := readTree(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	must(t, tx.Files().WriteFile("a.txt", []byte("a2"), 0o644))
	must(t, tx.Files().MkdirAll("new", 0o755))
	must(t, tx.Files().WriteFile("new/b.txt", []byte("b"), 0o644))
	up := filepath.Join(tx.StateDir(), "upper")
	must(t, syscall.Mkfifo(filepath.Join(up, "new", "fifo"), 0o600))
	must(t, plantSocket(filepath.Join(up, "sock")))
	must(t, os.Link(secret, filepath.Join(up, "linked-out")))
	must(t, os.WriteFile(filepath.Join(up, "pair1"), []byte("p"), 0o644))
	must(t, os.Link(filepath.Join(up, "pair1"), filepath.Join(up, "pair2")))
	if err := syscall.Mknod(filepath.Join(up, "dev"), syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
		t.Logf("no device here: %v", err)
	}
	cs, err := tx.Diff()
	must(t, err)
	if got, want := ops(cs), "write a.txt\nmkdir new\nwrite new/b.txt\nwrite pair1\nwrite pair2"; got != want {
		t.Errorf("changes:\n%s\nwant:\n%s", got, want)
	}
	want := "hard-link linked-out\nfifo new/fifo\nsocket sock"
	if _, err := os.Lstat(filepath.Join(up, "dev")); err == nil {
		want = "device dev\n" + want
	}
	if got := refusals(cs); got != want {
		t.Errorf("refused:\n%s\nwant:\n%s", got, want)
	}
	for _, r := range cs.Refused {
		if r.Reason == "" {
			t.Errorf("%s refused without a reason", r.Path)
		}
	}
	if n := cs.Counts()["refused"]; n != len(cs.Refused) {
		t.Errorf("counts %v", cs.Counts())
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	after := readTree(t, ws)
	if after["a.txt"] != "a2" || after["new/b.txt"] != "b" || after["keep.txt"] != before["keep.txt"] {
		t.Errorf("committed tree %v", after)
	}
	for _, p := range []string{"new/fifo", "sock", "linked-out", "dev"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("refused %s was committed", p)
		}
	}
	p1, err1 := os.Stat(filepath.Join(ws, "pair1"))
	p2, err2 := os.Stat(filepath.Join(ws, "pair2"))
	if err1 != nil || err2 != nil || !os.SameFile(p1, p2) || linkCount(p1) != 2 {
		t.Errorf("pair1 and pair2 not committed as one file with two names: %v %v", err1, err2)
	}
	if b, _ := os.ReadFile(secret); string(b) != "s" {
		t.Error("secret changed")
	}
}

// TestHardLinkToUnchangedFile: `ln a.txt b` in the overlay copies a.txt
// up with two names. Both are in the change set, b linking to a.txt,
// and the commit leaves one file with both names, as `ln` would have.
func TestHardLinkToUnchangedFile(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	up := filepath.Join(tx.StateDir(), "upper")
	must(t, copyFile(filepath.Join(ws, "a.txt"), filepath.Join(up, "a.txt"), 0o644))
	must(t, os.Link(filepath.Join(up, "a.txt"), filepath.Join(up, "b")))
	cs, err := tx.Diff()
	must(t, err)
	if ops(cs) != "write a.txt\nwrite b" || refusals(cs) != "" || cs.Changes[1].Link != "a.txt" || cs.Changes[0].Link != "" {
		t.Fatalf("changes %q (%+v), refused %q", ops(cs), cs.Changes, refusals(cs))
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	a, err1 := os.Stat(filepath.Join(ws, "a.txt"))
	b, err2 := os.Stat(filepath.Join(ws, "b"))
	if err1 != nil || err2 != nil || !os.SameFile(a, b) {
		t.Fatalf("a.txt and b are not one file: %v %v", err1, err2)
	}
}

// deepDirs makes, under dir, nested directories whose path grows past
// PATH_MAX (each step by openat, as a child that cd's down would), and
// writes a file at the bottom. It returns the first relative path that
// is too long as seen from base.
func deepDirs(t *testing.T, dir string) {
	t.Helper()
	name := strings.Repeat("d", 200)
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	for range 25 { // 25 × 201 bytes > 4096
		must(t, unix.Mkdirat(fd, name, 0o755))
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		must(t, err)
		unix.Close(fd)
		fd = next
	}
	f, err := unix.Openat(fd, "deep.txt", unix.O_WRONLY|unix.O_CREAT, 0o644)
	must(t, err)
	unix.Write(f, []byte("deep"))
	unix.Close(f)
	unix.Close(fd)
}

// TestRefusedPathMax: a tree deeper than PATH_MAX is refused from the
// directory where its path gets too long; what is above it commits.
func TestRefusedPathMax(t *testing.T) {
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	must(t, tx.Files().WriteFile("ok.txt", []byte("ok"), 0o644))
	deepDirs(t, filepath.Join(tx.StateDir(), "upper"))
	cs, err := tx.Diff()
	must(t, err)
	if len(cs.Refused) != 1 || cs.Refused[0].Kind != RefusedPathTooLong {
		t.Fatalf("refused %v", cs.Refused)
	}
	if r := cs.Refused[0]; len(filepath.Join(tx.StateDir(), "upper", r.Path)) < pathMax ||
		len(filepath.Join(tx.StateDir(), "upper", filepath.Dir(r.Path))) >= pathMax {
		t.Errorf("refused at %d bytes, not where the path first gets too long", len(r.Path))
	}
	for _, c := range cs.Changes {
		if len(c.Path) >= len(cs.Refused[0].Path) {
			t.Errorf("change %s is under the refused path", c.Path[:40])
		}
	}
	if !strings.Contains(ops(cs), "write ok.txt") {
		t.Errorf("ok.txt lost: %s", ops(cs))
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(ws, "ok.txt")); string(b) != "ok" {
		t.Error("ok.txt not committed")
	}
}

// refusedScript leaves, in the workspace, one of each thing the booth
// used to lose the whole change set over, beside ordinary writes. With
// python3 it makes a unix socket too (socketLine).
const refusedScript = `set -e
echo keep > keep.txt
mkdir -p .venv/bin .venv/lib
ln -s /usr/bin/python3 .venv/bin/python
ln -s lib .venv/lib64
ln -s .. up
ln -s /nonexistent dangling
mkfifo pipe
echo a > a.txt
ln a.txt a-link
d=$(printf 'd%.0s' $(seq 200))
mkdir $d
echo deep > $d/deep.txt
i=0
while [ $i -lt 24 ]; do mv $d t; mkdir $d; mv t $d/$d; i=$((i+1)); done
`

const socketLine = "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('sock')\"\n"

// refusedChild runs refusedScript in mode and returns the change set and
// whether a socket was made.
func refusedChild(t *testing.T, mode Mode) (*Tx, ChangeSet, bool) {
	t.Helper()
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"README.md": "r"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(func() { tx.Rollback(ctx) })
	script, socket := refusedScript, false
	if _, err := exec.LookPath("python3"); err == nil {
		script, socket = script+socketLine, true
	}
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out, Mode: mode, Notice: &bytes.Buffer{}})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("child: exit %d: %s", res.ExitCode, out.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	return tx, cs, socket
}

// TestExecCopyRefused runs a child in the copy fallback that makes a
// venv's links, a link up, a dangling link, a fifo, a socket, a hard link
// and a path over PATH_MAX: every link is staged, each of the others
// refused, the rest kept whole and committed.
func TestExecCopyRefused(t *testing.T) {
	tx, cs, socket := refusedChild(t, ModeCopy)
	checkRefusedRun(t, cs, socket, false)
	_, err := tx.Commit(ctx)
	must(t, err)
	ws := tx.Workspace()
	if got, _ := os.Readlink(filepath.Join(ws, ".venv/bin/python")); got != "/usr/bin/python3" {
		t.Errorf("committed .venv/bin/python -> %q", got)
	}
	if got, _ := os.Readlink(filepath.Join(ws, "up")); got != ".." {
		t.Errorf("committed up -> %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "keep.txt")); string(b) != "keep\n" {
		t.Errorf("keep.txt = %q", b)
	}
	for _, p := range []string{"pipe", "sock"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err == nil {
			t.Errorf("refused %s was committed", p)
		}
	}
}

// checkRefusedRun checks the change set of refusedScript. With pairs
// (the kernel overlay), `ln a.txt a-link` is a hard-link group; the copy
// fallback refuses it.
func checkRefusedRun(t *testing.T, cs ChangeSet, socket, pairs bool) {
	t.Helper()
	links := map[string]string{}
	writes := map[string]bool{}
	for _, c := range cs.Changes {
		switch c.Op {
		case OpSymlink:
			links[c.Path] = c.Target
		case OpWrite:
			writes[c.Path] = true
		}
	}
	wantLinks := map[string]string{".venv/bin/python": "/usr/bin/python3", ".venv/lib64": "lib", "up": "..", "dangling": "/nonexistent"}
	for p, target := range wantLinks {
		if links[p] != target {
			t.Errorf("symlink %s -> %q, want %q", p, links[p], target)
		}
	}
	if !writes["keep.txt"] {
		t.Errorf("keep.txt lost: %s", ops(cs))
	}
	kinds := map[RefusalKind][]string{}
	for _, r := range cs.Refused {
		kinds[r.Kind] = append(kinds[r.Kind], r.Path)
	}
	if got := kinds[RefusedFIFO]; len(got) != 1 || got[0] != "pipe" {
		t.Errorf("fifo refusals %q (all: %s)", got, refusals(cs))
	}
	linked := false
	for _, c := range cs.Changes {
		// "a-link" sorts first: a.txt is the other name.
		linked = linked || c.Path == "a.txt" && c.Op == OpWrite && c.Link == "a-link"
	}
	if got := kinds[RefusedHardLink]; pairs && (len(got) != 0 || !linked) {
		t.Errorf("a.txt and a-link are not one file's names: %s (refused: %s)", ops(cs), refusals(cs))
	} else if !pairs && len(got) == 0 {
		t.Errorf("no hard-link refusal (all: %s)", refusals(cs))
	}
	if got := kinds[RefusedPathTooLong]; len(got) != 1 {
		t.Errorf("path-too-long refusals: %d (all: %s)", len(got), refusals(cs))
	}
	if got := kinds[RefusedSocket]; socket && (len(got) != 1 || got[0] != "sock") {
		t.Errorf("socket refusals %q (all: %s)", got, refusals(cs))
	}
}

// TestExecOverlayRefused is TestExecCopyRefused in the kernel overlay,
// where the overlay is available.
func TestExecOverlayRefused(t *testing.T) {
	caps := Probe(ctx, t.TempDir())
	if !caps.Overlay {
		testenv.Unavailable(t, fmt.Sprintf("overlayfs in an unprivileged user namespace, refused here (%v)", caps.Notes),
			"run on Linux with unprivileged user namespaces allowed")
	}
	_, cs, socket := refusedChild(t, ModeOverlay)
	checkRefusedRun(t, cs, socket, true)
}

// TestExecCopyVenv runs `python3 -m venv` itself in the booth (the copy
// fallback) and commits: the venv's absolute links to the interpreter are
// staged and committed as links, and the committed venv runs.
func TestExecCopyVenv(t *testing.T) {
	py := testenv.RequirePython(t)
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{py, "-m", "venv", "--without-pip", ".venv"}, Stdout: &out, Stderr: &out, Mode: ModeCopy, Notice: &bytes.Buffer{}})
	must(t, err)
	if res.ExitCode != 0 {
		t.Fatalf("venv: exit %d: %s", res.ExitCode, out.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	abs := 0
	for _, c := range cs.Changes {
		if c.Op == OpSymlink && filepath.IsAbs(c.Target) {
			abs++
		}
	}
	if abs == 0 || len(cs.Refused) != 0 {
		t.Fatalf("venv: %d absolute links, refused %v:\n%s", abs, cs.Refused, cs)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	cmd := exec.Command(filepath.Join(ws, ".venv", "bin", "python"), "-c", "import sys; print(sys.prefix)")
	got, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(got)) != filepath.Join(ws, ".venv") {
		t.Fatalf("the committed venv's python: %q, %v", got, err)
	}
}

// TestWholeCommitRefuses: a transaction begun Whole (the SDK's) commits
// all it staged or nothing: an entry the change set refuses (a fifo a
// staged shell command made) fails the commit with the refusals listed,
// applies nothing and leaves it open; without the entry it commits.
func TestWholeCommitRefuses(t *testing.T) {
	ws := t.TempDir()
	tx, err := Begin(ws, Options{Whole: true})
	must(t, err)
	defer tx.Rollback(ctx)
	must(t, tx.Files().WriteFile("a.txt", []byte("a"), 0o644))
	fifo := filepath.Join(tx.StateDir(), "upper", "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	_, err = tx.Commit(ctx)
	var re *RefusedError
	if !errors.As(err, &re) || len(re.Refused) != 1 || re.Refused[0].Path != "fifo" || !strings.Contains(err.Error(), "nothing committed") {
		t.Fatalf("a Whole commit with a fifo staged: %v; want a RefusedError naming it", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "a.txt")); err == nil {
		t.Error("the refused commit applied a.txt")
	}
	if tx.Closed() {
		t.Fatal("the refused commit closed the transaction")
	}
	must(t, os.Remove(fifo))
	cs, err := tx.Commit(ctx)
	if err != nil || len(cs.Changes) != 1 {
		t.Fatalf("the commit without the fifo: %v, %v", cs.Changes, err)
	}
}
