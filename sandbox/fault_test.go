//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
	if testing.Short() {
		t.Skip("spawns a process per commit step")
	}
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
