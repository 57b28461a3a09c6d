//go:build linux

package sandbox

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// These tests cover the copy fallback (ModeCopy, ModeReflink): where it
// runs the agent, what its fold compares against, and what it copies.

// copyExec runs script with sh in the copy fallback and returns its
// output; the run must succeed with exit 0.
func copyExec(t *testing.T, tx *Tx, script string, env ...string) string {
	t.Helper()
	var out bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Env: append(os.Environ(), env...),
		Stdout: &out, Stderr: &out, Mode: ModeCopy, Notice: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("exec: %v (output %q)", err, out.String())
	}
	if res.ExitCode != 0 {
		t.Fatalf("exec: exit %d: %s", res.ExitCode, out.String())
	}
	return out.String()
}

// copyPlaces lists what is left beside the workspace and in its parent
// that a copy run could have made.
func copyLeftovers(t *testing.T, ws string) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{filepath.Dir(ws), os.TempDir()} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), copyPrefix) {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}

// TestCopyRunsOutsideWorkspace: the child runs in a copy that is not
// inside the workspace, so no number of ".." from it reaches the real
// workspace, $PWD names where it really is, and the copy is gone after
// the run.
func TestCopyRunsOutsideWorkspace(t *testing.T) {
	t.Run("state root inside", func(t *testing.T) { copyRunsOutside(t, false) })
	t.Run("state root outside", func(t *testing.T) { copyRunsOutside(t, true) })
}

func copyRunsOutside(t *testing.T, outsideState bool) {
	top := t.TempDir()
	ws := filepath.Join(top, "a", "b", "c", "ws")
	mkTree(t, ws, map[string]string{"f.txt": "f", "sub/g.txt": "g"})
	var opts Options
	if outsideState {
		opts.StateRoot = filepath.Join(top, "state")
	}
	tx, err := Begin(ws, opts)
	must(t, err)
	defer tx.Rollback(ctx)
	out := copyExec(t, tx, `set -e
echo "cwd $(pwd -P)"
echo "pwd $PWD"
d=.
for i in 1 2 3 4 5 6 7 8; do d=$d/..; echo "up $(cd $d && pwd -P)"; done
echo escaped > ../../../../escaped.txt
echo x > made.txt
`)
	var cwd string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		kind, p, _ := strings.Cut(line, " ")
		switch kind {
		case "cwd":
			cwd = p
			if Within(p, ws) {
				t.Errorf("the child ran inside the workspace: %s", p)
			}
		case "pwd":
			if p != cwd {
				t.Errorf("$PWD is %s, the child is in %s", p, cwd)
			}
		case "up":
			if Within(p, ws) {
				t.Errorf("a parent of the copy, %s, is in the workspace", p)
			}
		}
	}
	if cwd == "" || filepath.Base(cwd) != filepath.Base(ws) {
		t.Errorf("the copy %q is not named after the workspace", cwd)
	}
	// A state root outside the workspace, on its file system, holds the
	// copy; else it is a private folder beside the workspace.
	if want := filepath.Join(tx.StateDir(), "copy", "ws"); outsideState && cwd != want {
		t.Errorf("the copy is %s, want %s", cwd, want)
	}
	if want := filepath.Join(filepath.Dir(ws), copyPrefix+tx.ID(), "ws"); !outsideState && cwd != want {
		t.Errorf("the copy is %s, want %s", cwd, want)
	}
	if _, err := os.Lstat(filepath.Join(ws, "escaped.txt")); err == nil {
		t.Errorf("../../../.. from the copy wrote the real workspace")
	}
	if _, err := os.Lstat(cwd); err == nil {
		t.Errorf("the copy %s is still there after the run", cwd)
	}
	if left := copyLeftovers(t, ws); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write made.txt" {
		t.Errorf("diff:\n%s", got)
	}
}

// realSideRun runs a child in the copy fallback that edits shared.txt,
// creates new.txt and modifies gone.txt, and, while it runs, calls
// during, then lets it finish.
func realSideRun(t *testing.T, during func(ws, cwd string)) *Tx {
	t.Helper()
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"keep.txt": "keep", "shared.txt": "shared", "gone.txt": "gone", "d/x.txt": "x"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(func() { tx.Rollback(ctx) })
	flags := t.TempDir()
	ready, goOn := filepath.Join(flags, "ready"), filepath.Join(flags, "go")
	done := make(chan string, 1)
	go func() {
		done <- copyExec(t, tx, `set -e
echo agent > shared.txt
echo agent > new.txt
echo agent >> gone.txt
pwd -P > "$READY.tmp" && mv "$READY.tmp" "$READY"
while [ ! -e "$GO" ]; do sleep 0.02; done
`, "READY="+ready, "GO="+goOn)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil {
			during(ws, strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, os.WriteFile(goOn, nil, 0o644))
	<-done
	return tx
}

// TestCopyKeepsRealSideEdits: a file the user creates in the real
// workspace while the child runs, and one the user edits that the child
// left alone, are untouched by the commit, never deleted. (A sweep of
// leftovers while the child runs leaves its copy alone.)
func TestCopyKeepsRealSideEdits(t *testing.T) {
	var ws string
	tx := realSideRun(t, func(w, cwd string) {
		ws = w
		must(t, os.WriteFile(filepath.Join(ws, "user.txt"), []byte("user"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "keep.txt"), []byte("user edit"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "d", "user.txt"), []byte("user"), 0o644))
		must(t, os.Mkdir(filepath.Join(ws, "userdir"), 0o755))
		if _, err := Recover(ctx, ws, Options{}); err != nil {
			t.Errorf("recover: %v", err)
		}
		if _, err := os.Stat(filepath.Join(cwd, "shared.txt")); err != nil {
			t.Errorf("a sweep during the run removed the live copy: %v", err)
		}
	})
	cs, err := tx.Diff()
	must(t, err)
	if got, want := ops(cs), "write gone.txt\nwrite new.txt\nwrite shared.txt"; got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	want := map[string]string{"keep.txt": "user edit", "user.txt": "user", "d/": "", "d/x.txt": "x", "d/user.txt": "user",
		"userdir/": "", "shared.txt": "agent\n", "new.txt": "agent\n", "gone.txt": "goneagent\n"}
	got := readTree(t, ws)
	for p, c := range want {
		if g, ok := got[p]; !ok || g != c {
			t.Errorf("%s = %q (present %v), want %q", p, g, ok, c)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tree %v", got)
	}
}

// TestCopyRealSideConflicts: a real-side edit, creation or delete of a
// path the child also changed, made while the child runs, is a conflict
// at commit; nothing is applied.
func TestCopyRealSideConflicts(t *testing.T) {
	var ws string
	tx := realSideRun(t, func(w, _ string) {
		ws = w
		must(t, os.WriteFile(filepath.Join(ws, "shared.txt"), []byte("user"), 0o644))
		must(t, os.WriteFile(filepath.Join(ws, "new.txt"), []byte("user"), 0o644))
		must(t, os.Remove(filepath.Join(ws, "gone.txt")))
	})
	_, err := tx.Commit(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("commit: %v, want a conflict", err)
	}
	got := map[string]bool{}
	for _, c := range ce.Conflicts {
		got[c.Path] = true
	}
	for _, p := range []string{"shared.txt", "new.txt", "gone.txt"} {
		if !got[p] {
			t.Errorf("no conflict on %s: %v", p, ce.Conflicts)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "shared.txt")); string(b) != "user" {
		t.Errorf("shared.txt = %q", b)
	}
}

// TestCopySkipsSpecialFiles: a fifo and a socket in the workspace are not
// copied, the child runs, and the fold neither deletes nor refuses them.
func TestCopySkipsSpecialFiles(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "run/keep": "k"})
	must(t, syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644))
	must(t, syscall.Mkfifo(filepath.Join(ws, "run", "pipe"), 0o644))
	l, err := net.Listen("unix", filepath.Join(ws, "run", "sock"))
	must(t, err)
	defer l.Close()
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	out := copyExec(t, tx, "ls -A . run; echo x > made.txt")
	if strings.Contains(out, "pipe") || strings.Contains(out, "sock") {
		t.Errorf("the copy holds special files:\n%s", out)
	}
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write made.txt" || len(cs.Refused) > 0 {
		t.Errorf("diff:\n%s\nrefused: %v", got, cs.Refused)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	for _, p := range []string{"pipe", "run/pipe", "run/sock"} {
		if fi, err := os.Lstat(filepath.Join(ws, p)); err != nil || fi.Mode().IsRegular() {
			t.Errorf("%s after commit: %v", p, err)
		}
	}
}

// makeSparse writes a 64 MiB file holding 4 KiB of data at each end.
func makeSparse(t *testing.T, p string) int64 {
	t.Helper()
	f, err := os.Create(p)
	must(t, err)
	defer f.Close()
	data := bytes.Repeat([]byte("d"), 4096)
	_, err = f.Write(data)
	must(t, err)
	_, err = f.WriteAt(data, 64<<20-4096)
	must(t, err)
	return blocks(t, p)
}

func blocks(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	must(t, syscall.Stat(p, &st))
	return st.Blocks
}

// TestCopyKeepsSparseFiles: the copy of a sparse file is as sparse as the
// file, and so is a sparse file the child changes, staged and committed.
func TestCopyKeepsSparseFiles(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	want := makeSparse(t, filepath.Join(ws, "sparse.bin"))
	makeSparse(t, filepath.Join(ws, "grow.bin"))
	if want > 64 {
		testenv.Unavailable(t, fmt.Sprintf("a file system that keeps holes (a sparse file took %d blocks)", want), "set TMPDIR to ext4, xfs, btrfs or tmpfs")
	}
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	out := copyExec(t, tx, "stat -c %b sparse.bin; printf more >> grow.bin")
	var got int64
	fmt.Sscan(out, &got)
	if got == 0 || got > want+8 {
		t.Errorf("the copy of sparse.bin has %d blocks, the file %d", got, want)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	if b := blocks(t, filepath.Join(ws, "grow.bin")); b > want+16 {
		t.Errorf("committed grow.bin has %d blocks, want about %d", b, want)
	}
	// copyFile, which stages copies and commits across file systems.
	must(t, copyFile(filepath.Join(ws, "sparse.bin"), filepath.Join(ws, "copied.bin"), 0o644))
	if b := blocks(t, filepath.Join(ws, "copied.bin")); b > want+8 {
		t.Errorf("copyFile filled holes: %d blocks, want %d", b, want)
	}
}

// TestCopyLeftoversRemoved: a copy left by a run that was killed is
// removed by the next recovery and by rollback; a copy of another
// workspace beside it is left alone.
func TestCopyLeftoversRemoved(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	leftover := filepath.Join(parent, copyPrefix+tx.ID())
	mkTree(t, leftover, map[string]string{"ws/a.txt": "a", "ws/deep/b.txt": "b"})
	other := filepath.Join(parent, copyPrefix+"tx-00000000000000000000000")
	mkTree(t, other, map[string]string{"ws2/a.txt": "a"})
	_, err = Recover(ctx, ws, Options{})
	must(t, err)
	if _, err := os.Lstat(leftover); err == nil {
		t.Errorf("recovery left the killed run's copy")
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("recovery removed another workspace's copy: %v", err)
	}
	mkTree(t, leftover, map[string]string{"ws/a.txt": "a"})
	must(t, tx.Rollback(ctx))
	if _, err := os.Lstat(leftover); err == nil {
		t.Errorf("rollback left the run's copy")
	}
}

// TestCopyFailureIsNotExitZero: when the copy cannot be made the child
// never runs, and Exec says so: an error and exit code -1, never 0.
func TestCopyFailureIsNotExitZero(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	// Something already holds the copy's place: it is not used.
	must(t, os.WriteFile(filepath.Join(parent, copyPrefix+tx.ID()), nil, 0o644))
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", "echo ran > ran.txt"}, Mode: ModeCopy, Notice: &bytes.Buffer{}})
	if err == nil || res.ExitCode != -1 {
		t.Fatalf("exec: exit %d, %v; want -1 and an error", res.ExitCode, err)
	}
	if strings.Contains(err.Error(), parent) {
		t.Errorf("the error names the raw path: %v", err)
	}
}

// TestCopyMaterializesTheView: the copy holds exactly the staged view
// (staged writes, deletes, replaced directories, modes, links), and the
// copy's state directory never shows.
func TestCopyMaterializesTheView(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	must(t, os.Chmod(filepath.Join(ws, "keep"), 0o750))
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	stageMixed(t, tx)
	var want []string
	var walk func(rel string)
	walk = func(rel string) {
		list, err := tx.Files().ReadDir(rel)
		must(t, err)
		for _, fi := range list {
			p := joinRel(rel, fi.Name())
			switch {
			case fi.IsDir():
				want = append(want, fmt.Sprintf("%s d %o", p, fi.Mode().Perm()))
				walk(p)
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := tx.Files().readlink(p)
				must(t, err)
				want = append(want, fmt.Sprintf("%s L %s", p, target))
			default:
				data, err := tx.Files().ReadFile(p)
				must(t, err)
				want = append(want, fmt.Sprintf("%s f %o %x", p, fi.Mode().Perm(), sha256.Sum256(data)))
			}
		}
	}
	walk(".")
	sort.Strings(want)
	script := `find . -mindepth 1 | LC_ALL=C sort | while read -r p; do p=${p#./}
if [ -L "$p" ]; then echo "$p L $(readlink "$p")"; elif [ -d "$p" ]; then echo "$p d $(stat -c %a "$p")"; else echo "$p f $(stat -c %a "$p") $(sha256sum < "$p" | cut -d' ' -f1)"; fi; done`
	got := strings.Split(strings.TrimSpace(copyExec(t, tx, script)), "\n")
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("copy:\n%s\nview:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCopyKeepsStateAndTape: the tape being recorded (Protect) is not in
// the copy, and a child that removes its folder and the booth's .jukebox
// folder stages the removal of the rest of what they hold, never of the
// folders, the tape or the booth's state; replacing .jukebox by a file
// is refused.
func TestCopyKeepsStateAndTape(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "tapes/run.jbx": "tape", "tapes/old.jbx": "old", ".jukebox/other.txt": "o"})
	tape := filepath.Join(ws, "tapes", "run.jbx")
	run := func(script string) (*Tx, ChangeSet, string) {
		tx, err := Begin(ws, Options{})
		must(t, err)
		var out bytes.Buffer
		res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Stdout: &out, Stderr: &out,
			Mode: ModeCopy, Notice: &bytes.Buffer{}, Protect: []string{tape}})
		must(t, err)
		if res.ExitCode != 0 {
			t.Fatalf("exit %d: %s", res.ExitCode, out.String())
		}
		cs, err := tx.Diff()
		must(t, err)
		return tx, cs, out.String()
	}
	tx, cs, out := run("ls tapes; rm -rf tapes .jukebox")
	if strings.Contains(out, "run.jbx") || !strings.Contains(out, "old.jbx") {
		t.Errorf("the copy's tapes folder: %q", out)
	}
	if got, want := ops(cs), "delete .jukebox/other.txt\ndelete tapes/old.jbx"; got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	_, err := tx.Commit(ctx)
	must(t, err)
	if b, err := os.ReadFile(tape); err != nil || string(b) != "tape" {
		t.Errorf("the tape after commit: %q, %v", b, err)
	}
	tx, cs, _ = run("rm -rf .jukebox && echo x > .jukebox")
	defer tx.Rollback(ctx)
	if got := refusals(cs); got != "unreadable .jukebox" || ops(cs) != "" {
		t.Errorf("refused %q, diff:\n%s", got, ops(cs))
	}
}

// The child side of TestCopyKilled: it runs before TestMain (init), only
// in the process that test starts.
func init() {
	ws := os.Getenv("SANDBOX_COPYKILL_WS")
	if ws == "" {
		return
	}
	tx, err := Begin(ws, Options{})
	if err == nil {
		_, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `pwd -P > "$0.tmp"; echo $$ >> "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 60`,
			os.Getenv("SANDBOX_COPYKILL_OUT")}, Mode: ModeCopy, Notice: &bytes.Buffer{}})
	}
	fmt.Fprintln(os.Stderr, "exec returned:", err)
	os.Exit(3)
}

// TestCopyKilled: when jukebox is killed (kill -9) while a child runs in
// the copy, the child goes with it (Pdeathsig), and the next recovery
// removes the copy it left.
func TestCopyKilled(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	out := filepath.Join(t.TempDir(), "child")
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "SANDBOX_COPYKILL_WS="+ws, "SANDBOX_COPYKILL_OUT="+out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	var cwd string
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(out); err == nil {
			fmt.Sscan(string(b), &cwd, &pid)
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the child never started: %s", stderr.String())
		}
	}
	must(t, cmd.Process.Kill())
	cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the agent (pid %d) outlived the killed jukebox", pid)
		}
	}
	if _, err := os.Stat(cwd); err != nil {
		t.Fatalf("the killed run's copy is not there to be swept: %v", err)
	}
	_, err := Recover(ctx, ws, Options{})
	must(t, err)
	if _, err := os.Lstat(filepath.Dir(cwd)); err == nil {
		t.Errorf("recovery left the killed run's copy %s", filepath.Dir(cwd))
	}
}

// alive reports whether pid is a running process (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}
