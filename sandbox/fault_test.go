//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// fileDB is a participant whose prepared state lives in files, so that it
// survives a killed process the way a PostgreSQL prepared transaction does.
type fileDB struct{ dir string }

func (d fileDB) Kind() string { return "filedb" }
func (d fileDB) set(gid, state string) error {
	return os.WriteFile(filepath.Join(d.dir, gid), []byte(state), 0o644)
}
func (d fileDB) get(gid string) string {
	b, _ := os.ReadFile(filepath.Join(d.dir, gid))
	return string(b)
}
func (d fileDB) Prepare(_ context.Context, gid string) error { return d.set(gid, "prepared") }
func (d fileDB) CommitPrepared(_ context.Context, gid string) error {
	return d.set(gid, "committed")
}
func (d fileDB) RollbackPrepared(_ context.Context, gid string) error {
	return d.set(gid, "rolledback")
}
func (d fileDB) Rollback(context.Context) error { return nil }
func (d fileDB) Resolve(_ context.Context, gid string, commit bool) error {
	if d.get(gid) != "prepared" {
		return nil // already finished
	}
	if commit {
		return d.set(gid, "committed")
	}
	return d.set(gid, "rolledback")
}

// committedState is what a clean commit of stageMixed produces.
func committedState(t *testing.T) (before, after string) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before = treeHash(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	_, err = tx.Commit(ctx)
	must(t, err)
	return before, treeHash(t, ws)
}

// commitSteps lists the failpoint steps of one commit of stageMixed.
func commitSteps(t *testing.T) []string {
	var steps []string
	failpoint = func(s string) error { steps = append(steps, s); return nil }
	defer func() { failpoint = nil }()
	ws, db := t.TempDir(), fileDB{t.TempDir()}
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	must(t, tx.Join(db))
	_, err = tx.Commit(ctx)
	must(t, err)
	return steps
}

// TestCrashAtEveryStep stops a commit at each step (as a crash would:
// no cleanup runs), crashes once more inside the first Recover, then
// recovers: the files and the participant are both old or both new.
func TestCrashAtEveryStep(t *testing.T) {
	before, after := committedState(t)
	steps, seen := commitSteps(t), map[string]int{}
	if len(steps) < 10 {
		t.Fatalf("too few steps: %v", steps)
	}
	for i, step := range steps {
		ws, db := t.TempDir(), fileDB{t.TempDir()}
		mkTree(t, ws, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMixed(t, tx)
		must(t, tx.Join(db))
		failpoint = crashAt(step)
		_, err = tx.Commit(ctx)
		if !errors.Is(err, ErrCrash) {
			t.Fatalf("step %s: commit: %v", step, err)
		}
		failpoint = crashAt("apply-3") // crash again while recovering
		Recover(ctx, ws, Options{}, db)
		failpoint = nil
		rep, err := Recover(ctx, ws, Options{}, db)
		must(t, err)
		checkAllOrNothing(t, fmt.Sprintf("step %d %s (%+v)", i, step, rep), ws, db, tx.gid(0), before, after, seen)
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("outcomes %v: want both old and new", seen)
	}
}

func crashAt(step string) func(string) error {
	return func(s string) error {
		if s == step {
			return ErrCrash
		}
		return nil
	}
}

func checkAllOrNothing(t *testing.T, what, ws string, db fileDB, gid, before, after string, seen map[string]int) {
	t.Helper()
	got := treeHash(t, ws)
	state := db.get(gid)
	switch {
	case got == after && state == "committed":
		seen["new"]++
	case got == before && (state == "rolledback" || state == ""):
		seen["old"]++
	default:
		t.Errorf("%s: tree old=%v new=%v, participant %q", what, got == before, got == after, state)
	}
	left, _ := List(ws, Options{})
	for _, info := range left {
		if info.Committing {
			t.Errorf("%s: commit left after recovery: %+v", what, info)
		}
	}
}

// TestKilledAtEveryStep runs each commit in a child process that kills
// itself with SIGKILL at one step, then recovers in this process.
func TestKilledAtEveryStep(t *testing.T) {
	testenv.Short(t, "spawns a process per commit step")
	before, after := committedState(t)
	exe, err := os.Executable()
	must(t, err)
	seen := map[string]int{}
	for _, step := range commitSteps(t) {
		ws, db := t.TempDir(), fileDB{t.TempDir()}
		mkTree(t, ws, sampleTree())
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "SANDBOX_CRASH_WS="+ws, "SANDBOX_CRASH_DB="+db.dir, "SANDBOX_CRASH_STEP="+step)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("step %s: child not killed: %v %s", step, err, out)
		}
		infos, _ := List(ws, Options{})
		if len(infos) != 1 {
			t.Fatalf("step %s: %d transactions in state dir", step, len(infos))
		}
		gid := fmt.Sprintf("jukebox-%s-0", infos[0].ID)
		_, err = Recover(ctx, ws, Options{}, db)
		must(t, err)
		checkAllOrNothing(t, "killed at "+step, ws, db, gid, before, after, seen)
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("outcomes %v: want both old and new", seen)
	}
}

// crashChild is the child side of TestKilledAtEveryStep, run from TestMain.
func crashChild() {
	ws, step := os.Getenv("SANDBOX_CRASH_WS"), os.Getenv("SANDBOX_CRASH_STEP")
	if ws == "" {
		return
	}
	t := &testing.T{}
	tx, err := Begin(ws, Options{})
	if err != nil {
		panic(err)
	}
	stageMixed(t, tx)
	tx.Join(fileDB{os.Getenv("SANDBOX_CRASH_DB")})
	failpoint = func(s string) error {
		if s == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		return nil
	}
	_, err = tx.Commit(ctx)
	fmt.Fprintln(os.Stderr, "commit returned", err, strings.Repeat("!", 3))
	os.Exit(3)
}

// applySteps lists the failpoint steps at which applying a commit can
// fail, with participants ("applied" is among them) or without.
func applySteps(t *testing.T, withDB bool) []string {
	var steps []string
	failpoint = func(s string) error {
		if strings.HasPrefix(s, "aside-") || strings.HasPrefix(s, "apply-") || s == "modes" || s == "applied" {
			steps = append(steps, s)
		}
		return nil
	}
	defer func() { failpoint = nil }()
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	if withDB {
		must(t, tx.Join(fileDB{t.TempDir()}))
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	return steps
}

// failAt makes step fail with err (a failure, not a crash).
func failAt(step string, err error) func(string) error {
	return func(s string) error {
		if s == step {
			return err
		}
		return nil
	}
}

// checkNoDebris fails if the commit left anything of its own in the
// workspace: temporary or kept-aside names, or the state directory.
func checkNoDebris(t *testing.T, what, ws string, stateWanted bool) {
	t.Helper()
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".jbx-") {
			t.Errorf("%s: %s left in the workspace", what, p)
		}
		return nil
	})
	_, err := os.Stat(filepath.Join(ws, ".jukebox"))
	if stateWanted != (err == nil) {
		t.Errorf("%s: state directory present %v, want %v", what, err == nil, stateWanted)
	}
}

// TestApplyErrorAtEveryStep makes each step of applying a commit fail
// (as EACCES, ENOSPC or an immutable directory would): the workspace is
// restored byte for byte, the commit returns a *CommitError that says so
// and names the cause, and the transaction stays open: rolled back or
// committed later, it ends as it should.
func TestApplyErrorAtEveryStep(t *testing.T) {
	before, after := committedState(t)
	steps := applySteps(t, false)
	if len(steps) < 20 {
		t.Fatalf("too few steps: %v", steps)
	}
	for k, step := range steps {
		ws := t.TempDir()
		mkTree(t, ws, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMixed(t, tx)
		failpoint = failAt(step, syscall.ENOSPC)
		_, err = tx.Commit(ctx)
		failpoint = nil
		var ce *CommitError
		if !errors.As(err, &ce) || !ce.Restored || !ce.Open || !errors.Is(err, syscall.ENOSPC) ||
			!strings.Contains(err.Error(), "the workspace was restored") {
			t.Fatalf("step %s: commit: %#v", step, err)
		}
		if step != "modes" && (ce.Path == "" || !strings.Contains(err.Error(), ce.Path)) {
			t.Errorf("step %s: the error names no path: %v", step, err)
		}
		if got := treeHash(t, ws); got != before {
			t.Fatalf("step %s: workspace not restored: %v", step, readTree(t, ws))
		}
		checkNoDebris(t, step, ws, true)
		if tx.Closed() {
			t.Fatalf("step %s: transaction closed", step)
		}
		if infos, _ := List(ws, Options{}); len(infos) != 1 || infos[0].Committing {
			t.Fatalf("step %s: list %+v", step, infos)
		}
		if k%2 == 0 {
			must(t, tx.Rollback(ctx))
			if treeHash(t, ws) != before {
				t.Fatalf("step %s: rollback after the failure changed the workspace", step)
			}
		} else {
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatalf("step %s: commit again: %v", step, err)
			}
			if treeHash(t, ws) != after {
				t.Fatalf("step %s: the second commit differs from a clean one", step)
			}
		}
		checkNoDebris(t, step, ws, false)
	}
}

// TestApplyErrorWithParticipant: with a participant, a failed apply
// restores the files and rolls the participant back, and the
// transaction with it (its work is gone).
func TestApplyErrorWithParticipant(t *testing.T) {
	before, _ := committedState(t)
	for _, step := range applySteps(t, true) {
		ws, db := t.TempDir(), fileDB{t.TempDir()}
		mkTree(t, ws, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMixed(t, tx)
		must(t, tx.Join(db))
		failpoint = failAt(step, syscall.EACCES)
		_, err = tx.Commit(ctx)
		failpoint = nil
		var ce *CommitError
		if !errors.As(err, &ce) || !ce.Restored || !ce.RolledBack || ce.Open || !tx.Closed() {
			t.Fatalf("step %s: commit: %v", step, err)
		}
		if treeHash(t, ws) != before || db.get(tx.gid(0)) != "rolledback" {
			t.Fatalf("step %s: tree restored %v, participant %q", step, treeHash(t, ws) == before, db.get(tx.gid(0)))
		}
		checkNoDebris(t, step, ws, false)
	}
}

// TestCrashWhileUndoing: a failed apply, then a crash while putting the
// originals back; Recover finishes the undo and the transaction is open.
func TestCrashWhileUndoing(t *testing.T) {
	before, after := committedState(t)
	// The undo steps of a commit that failed once everything was applied.
	var undoSteps []string
	failpoint = func(s string) error {
		if strings.HasPrefix(s, "undo") {
			undoSteps = append(undoSteps, s)
		}
		return failAt("modes", syscall.EPERM)(s)
	}
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	_, err = tx.Commit(ctx)
	failpoint = nil
	if !errors.Is(err, syscall.EPERM) || len(undoSteps) < 10 {
		t.Fatalf("commit: %v; undo steps %v", err, undoSteps)
	}
	pairs := [][2]string{{"aside-6", "undo-1"}, {"apply-12", "undo-7"}}
	for _, step := range undoSteps {
		pairs = append(pairs, [2]string{"modes", step})
	}
	for _, pair := range pairs {
		ws := t.TempDir()
		mkTree(t, ws, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMixed(t, tx)
		failpoint = func(s string) error {
			switch s {
			case pair[0]:
				return syscall.EPERM
			case pair[1]:
				return ErrCrash
			}
			return nil
		}
		_, err = tx.Commit(ctx)
		failpoint = nil
		if !errors.Is(err, ErrCrash) {
			t.Fatalf("%v: commit: %v", pair, err)
		}
		rep, err := Recover(ctx, ws, Options{})
		must(t, err)
		if len(rep.Restored) != 1 || treeHash(t, ws) != before {
			t.Fatalf("%v: report %+v, restored %v", pair, rep, treeHash(t, ws) == before)
		}
		checkNoDebris(t, pair[0], ws, true)
		tx2, err := Open(ws, tx.ID(), Options{})
		must(t, err)
		if _, err := tx2.Commit(ctx); err != nil {
			t.Fatalf("%v: commit after recovery: %v", pair, err)
		}
		if treeHash(t, ws) != after {
			t.Fatalf("%v: commit after recovery differs from a clean one", pair)
		}
	}
}

// TestRecoverUndoesWhatCannotFinish: a crash mid-apply, then the same
// step fails for good while recovering: Recover undoes the commit with
// the originals it kept, instead of leaving half a change set.
func TestRecoverUndoesWhatCannotFinish(t *testing.T) {
	before, _ := committedState(t)
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	failpoint = crashAt("apply-6")
	_, err = tx.Commit(ctx)
	if !errors.Is(err, ErrCrash) {
		t.Fatalf("commit: %v", err)
	}
	failpoint = failAt("apply-12", syscall.ENOSPC)
	rep, err := Recover(ctx, ws, Options{})
	failpoint = nil
	must(t, err)
	if len(rep.Restored) != 1 || len(rep.Committed) != 0 || treeHash(t, ws) != before {
		t.Fatalf("report %+v, restored %v: %v", rep, treeHash(t, ws) == before, readTree(t, ws))
	}
	if infos, _ := List(ws, Options{}); len(infos) != 1 || infos[0].Committing {
		t.Fatalf("list %+v", infos)
	}
}

// TestApplyErrorReadOnlyDirectory: a real EPERM/EACCES, from an
// immutable directory (as root) or a read-only one (otherwise), in the
// middle of a commit whose earlier changes are already applied.
func TestApplyErrorReadOnlyDirectory(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "ro/f": "f", "z.txt": "z"})
	ro := filepath.Join(ws, "ro")
	roMode := os.FileMode(0o755)
	if os.Geteuid() != 0 {
		roMode = 0o555
		must(t, os.Chmod(ro, roMode))
		t.Cleanup(func() { os.Chmod(ro, 0o755) })
	}
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("A"), 0o644))
	must(t, tx.Files().WriteFile("new.txt", []byte("new"), 0o644))
	must(t, tx.Files().Remove("z.txt"))
	// What an agent's write to ro/f leaves in the staging area (staging
	// in process would refuse it as the directory is read-only).
	upRO := filepath.Join(tx.StateDir(), "upper", "ro")
	must(t, os.Mkdir(upRO, 0o755))
	must(t, os.WriteFile(filepath.Join(upRO, "f"), []byte("F"), 0o644))
	must(t, os.Chmod(upRO, roMode))
	if os.Geteuid() == 0 {
		if out, err := exec.Command("chattr", "+i", ro).CombinedOutput(); err != nil {
			testenv.Unavailable(t, fmt.Sprintf("chattr +i, an immutable folder (%v %s)", err, out), "install e2fsprogs and run as root on ext4, xfs or btrfs")
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", ro).Run() })
	}
	before := treeHash(t, ws)
	_, err = tx.Commit(ctx)
	var ce *CommitError
	if !errors.As(err, &ce) || ce.Path != "ro/f" || !ce.Restored || !ce.Open ||
		!(errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)) {
		t.Fatalf("commit: %v", err)
	}
	if treeHash(t, ws) != before {
		t.Fatalf("workspace not restored: %v", readTree(t, ws))
	}
	checkNoDebris(t, "read-only", ws, true)
	if os.Geteuid() == 0 {
		must(t, exec.Command("chattr", "-i", ro).Run())
	} else {
		must(t, os.Chmod(ro, 0o755))
		must(t, os.Chmod(upRO, 0o755))
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit once writable: %v", err)
	}
	got := readTree(t, ws)
	if got["a.txt"] != "A" || got["ro/f"] != "F" || got["new.txt"] != "new" || got["z.txt"] != "" {
		t.Fatalf("committed tree %v", got)
	}
	checkNoDebris(t, "read-only", ws, false)
}

// TestReplaceByDirectoryCommits: a file replaced by a non-empty directory
// and a symlink to a directory replaced by a real one are legitimate
// changes, not escapes.
func TestReplaceByDirectoryCommits(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"f": "file", "target/x": "x", "l": "-> target", "keep.txt": "k"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().Remove("f"))
	must(t, tx.Files().MkdirAll("f/sub", 0o755))
	must(t, tx.Files().WriteFile("f/sub/g", []byte("g"), 0o644))
	must(t, tx.Files().Remove("l"))
	must(t, tx.Files().Mkdir("l", 0o700))
	must(t, tx.Files().WriteFile("l/y", []byte("y"), 0o600))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	got := readTree(t, ws)
	want := map[string]string{"f/": "", "f/sub/": "", "f/sub/g": "g", "l/": "", "l/y": "y", "target/": "", "target/x": "x", "keep.txt": "k"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed tree %v\nwant %v", got, want)
	}
	if fi, _ := os.Lstat(filepath.Join(ws, "l")); !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("l: %v", fi.Mode())
	}
	checkNoDebris(t, "replace", ws, false)
}

// TestRealSideDeleteIsConflict: a file the agent changed (copied up by
// the overlay, or staged in process) and deleted on the real side before
// the commit is a conflict, never silently written back.
func TestRealSideDeleteIsConflict(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a", "b.txt": "b", "c/d.txt": "d"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	// What a child's `echo more >> a.txt` and `chmod 600 c/d.txt` leave
	// in the kernel overlay's upper dir: copies up, marked with their origin.
	up := tx.StateDir() + "/upper"
	must(t, os.WriteFile(up+"/a.txt", []byte("a more"), 0o644))
	must(t, os.Mkdir(up+"/c", 0o755))
	must(t, os.WriteFile(up+"/c/d.txt", []byte("d"), 0o600))
	for _, p := range []string{up + "/a.txt", up + "/c/d.txt"} {
		must(t, unix.Lsetxattr(p, "user.overlay.origin", nil, 0))
	}
	must(t, tx.Files().WriteFile("b.txt", []byte("b more"), 0o644)) // staged in process
	for _, p := range []string{"a.txt", "b.txt", "c/d.txt"} {
		must(t, os.Remove(filepath.Join(ws, p)))
	}
	before := treeHash(t, ws)
	_, err = tx.Commit(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 3 {
		t.Fatalf("commit: %v", err)
	}
	for _, c := range ce.Conflicts {
		if c.Reason != "deleted since begin" {
			t.Errorf("%s: %s", c.Path, c.Reason)
		}
	}
	if treeHash(t, ws) != before || tx.Closed() {
		t.Fatalf("refused commit changed the workspace or closed the transaction")
	}
	must(t, tx.Rollback(ctx))
}

// TestRealSideDeleteIsConflictOverlay runs the same through a child in
// the kernel overlay, where the kernel permits it.
func TestRealSideDeleteIsConflictOverlay(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", "echo more >> a.txt"}, Mode: ModeOverlay, Notice: io.Discard})
	if err != nil || res.Mode != ModeOverlay || res.ExitCode != 0 {
		testenv.Unavailable(t, fmt.Sprintf("the overlay booth (%v %+v)", err, res), "run on Linux with unprivileged user namespaces allowed")
	}
	must(t, os.Remove(filepath.Join(ws, "a.txt")))
	_, err = tx.Commit(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Reason != "deleted since begin" {
		t.Fatalf("commit: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatal("the real-side delete was undone")
	}
}

// TestPathAppearingDuringCommit: a file the user makes, after the
// decision, where the commit writes a new one is moved aside like any
// original, so a failed commit gives it back.
func TestPathAppearingDuringCommit(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("new.txt", []byte("agent"), 0o644))
	must(t, tx.Files().WriteFile("z.txt", []byte("z"), 0o644))
	failpoint = func(s string) error {
		switch s {
		case "decided":
			return os.WriteFile(filepath.Join(ws, "new.txt"), []byte("user"), 0o644)
		case "apply-1":
			return syscall.ENOSPC
		}
		return nil
	}
	_, err = tx.Commit(ctx)
	failpoint = nil
	var ce *CommitError
	if !errors.As(err, &ce) || ce.UndoErr != nil || !ce.Open {
		t.Fatalf("commit: %v", err)
	}
	if got := readTree(t, ws); got["new.txt"] != "user" || got["z.txt"] != "" {
		t.Fatalf("after the undo: %v", got)
	}
	must(t, tx.Rollback(ctx))
}
