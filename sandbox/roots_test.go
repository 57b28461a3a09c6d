//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedRootExec: a folder outside the workspace staged with it
// (--allow-write) is copy-on-write in the booth as the workspace is:
// nothing reaches it until the commit, which applies both; a rollback
// leaves both as they were.
func TestStagedRootExec(t *testing.T) {
	requireOverlay(t)
	ws, extra := t.TempDir(), t.TempDir()
	mkTree(t, extra, map[string]string{"old.txt": "old", "keep.txt": "keep"})
	before := treeHash(t, extra)
	script := `echo w > a.txt && echo cached > "$X/cache.txt" && rm "$X/old.txt" && mkdir "$X/d" && echo n > "$X/d/n"`
	run := func() (*Tx, *Tx) {
		tx, err := Begin(ws, Options{})
		must(t, err)
		sub, err := tx.StageRoot(extra)
		must(t, err)
		var out bytes.Buffer
		res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Env: append(os.Environ(), "X="+extra),
			Stdout: &out, Stderr: &out, Notice: io.Discard})
		if err != nil || res.ExitCode != 0 || !res.Confined {
			t.Fatalf("exec: %+v %v\n%s", res, err, out.String())
		}
		if treeHash(t, extra) != before {
			t.Fatal("the agent's writes reached the staged root before the commit")
		}
		return tx, sub
	}
	tx, sub := run()
	cs, err := sub.Diff()
	must(t, err)
	var got []string
	for _, c := range cs.Changes {
		got = append(got, fmt.Sprintf("%s %s", c.Op, c.Path))
	}
	if want := "write cache.txt,mkdir d,write d/n,delete old.txt"; strings.Join(got, ",") != want {
		t.Errorf("the root's change set: %v, want %s", got, want)
	}
	if roots := tx.Roots(); len(roots) != 1 || roots[0].Root() != extra {
		t.Errorf("Roots: %v", roots)
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	for p, want := range map[string]string{filepath.Join(ws, "a.txt"): "w\n", filepath.Join(extra, "cache.txt"): "cached\n", filepath.Join(extra, "d/n"): "n\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s after commit: %q, %v", p, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(extra, "old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("old.txt still there after the commit")
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the booth's state is left in the workspace")
	}

	// A rollback leaves both as they were.
	must(t, os.Remove(filepath.Join(ws, "a.txt")))
	mkTree(t, extra, map[string]string{"old.txt": "old"})
	must(t, os.Remove(filepath.Join(extra, "cache.txt")))
	must(t, os.RemoveAll(filepath.Join(extra, "d")))
	tx, _ = run()
	must(t, tx.Rollback(ctx))
	if treeHash(t, extra) != before {
		t.Error("a rollback changed the staged root")
	}
	if _, err := os.Stat(filepath.Join(ws, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a rollback left a.txt")
	}
}

// TestStagedRootCrashAtEveryStep stops a commit of the workspace and a
// staged root at each step, as a crash would, crashes again inside the
// first Recover, then recovers: both are old, or both new.
func TestStagedRootCrashAtEveryStep(t *testing.T) {
	setup := func() (ws, extra string, tx *Tx) {
		ws, extra = t.TempDir(), t.TempDir()
		mkTree(t, ws, sampleTree())
		mkTree(t, extra, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		sub, err := tx.StageRoot(extra)
		must(t, err)
		stageMixed(t, tx)
		stageMixed(t, sub)
		return ws, extra, tx
	}
	ws, extra, tx := setup()
	beforeWS, beforeX := treeHash(t, ws), treeHash(t, extra)
	var steps []string
	failpoint = func(s string) error { steps = append(steps, s); return nil }
	_, err := tx.Commit(ctx)
	failpoint = nil
	must(t, err)
	afterWS, afterX := treeHash(t, ws), treeHash(t, extra)
	if afterX == beforeX || !containsStep(steps, "root-decided") {
		t.Fatalf("the root's commit did nothing; steps %v", steps)
	}
	seen := map[string]int{}
	for i, step := range steps {
		ws, extra, tx := setup()
		failpoint = crashAt(step)
		_, err := tx.Commit(ctx)
		if !errors.Is(err, ErrCrash) {
			failpoint = nil
			t.Fatalf("step %s: commit: %v", step, err)
		}
		failpoint = crashAt("apply-3") // crash again while recovering
		Recover(ctx, ws, Options{})
		failpoint = nil
		rep, err := Recover(ctx, ws, Options{})
		what := fmt.Sprintf("step %d %s (%+v)", i, step, rep)
		if err != nil {
			t.Fatalf("%s: recover: %v", what, err)
		}
		w, x := treeHash(t, ws), treeHash(t, extra)
		switch {
		case w == beforeWS && x == beforeX:
			seen["old"]++
		case w == afterWS && x == afterX:
			seen["new"]++
		default:
			t.Errorf("%s: workspace old=%v new=%v, staged root old=%v new=%v: not all or nothing",
				what, w == beforeWS, w == afterWS, x == beforeX, x == afterX)
		}
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("outcomes %v: want both old and new", seen)
	}
}

func containsStep(steps []string, s string) bool {
	for _, x := range steps {
		if x == s {
			return true
		}
	}
	return false
}

// TestStagedRootConflict: a file of the staged root changed on the real
// side is a conflict, named by its absolute path, that leaves the whole
// transaction open and nothing applied.
func TestStagedRootConflict(t *testing.T) {
	ws, extra := t.TempDir(), t.TempDir()
	mkTree(t, extra, map[string]string{"f.txt": "v1"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	sub, err := tx.StageRoot(extra)
	must(t, err)
	must(t, tx.Files().WriteFile("w.txt", []byte("ws"), 0o644))
	must(t, sub.Files().WriteFile("f.txt", []byte("agent"), 0o644))
	must(t, os.WriteFile(filepath.Join(extra, "f.txt"), []byte("user"), 0o644))
	_, err = tx.Commit(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != filepath.Join(extra, "f.txt") {
		t.Fatalf("commit: %v", err)
	}
	if tx.Closed() || sub.Closed() {
		t.Error("a conflict closed the transaction")
	}
	if _, err := os.Stat(filepath.Join(ws, "w.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Error("the workspace's change was applied despite the root's conflict")
	}
	must(t, tx.Rollback(ctx))
	if b, _ := os.ReadFile(filepath.Join(extra, "f.txt")); string(b) != "user" {
		t.Errorf("the user's edit: %q", b)
	}
}

// TestStagedRootReopened: a transaction kept open (--keep) is opened
// again with its staged roots, and commits them.
func TestStagedRootReopened(t *testing.T) {
	ws, extra := t.TempDir(), t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	sub, err := tx.StageRoot(extra)
	must(t, err)
	must(t, sub.Files().WriteFile("kept.txt", []byte("k"), 0o644))
	tx.Release() // its process ended
	again, err := Open(ws, tx.ID(), Options{})
	must(t, err)
	roots := again.Roots()
	if len(roots) != 1 || roots[0].Root() != extra {
		t.Fatalf("roots: %v", roots)
	}
	_, err = again.Commit(ctx)
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(extra, "kept.txt")); err != nil || string(b) != "k" {
		t.Errorf("kept.txt: %q %v", b, err)
	}
}

// TestStageRootRefusals: what StageRoot refuses, and the copy fallback,
// which cannot stage a root.
func TestStageRootRefusals(t *testing.T) {
	ws, extra := t.TempDir(), t.TempDir()
	must(t, os.Mkdir(filepath.Join(ws, "inner"), 0o755))
	must(t, os.Symlink(extra, filepath.Join(t.TempDir(), "link")))
	link := filepath.Join(filepath.Dir(extra), "link-to-extra")
	must(t, os.Symlink(extra, link))
	file := filepath.Join(extra, "f")
	must(t, os.WriteFile(file, nil, 0o644))
	tx, err := Begin(ws, Options{})
	must(t, err)
	for path, want := range map[string]string{
		filepath.Join(ws, "inner"):   "overlaps the workspace",
		filepath.Dir(ws):             "overlaps the workspace",
		link:                         "is a symlink",
		file:                         "not a folder",
		filepath.Join(extra, "none"): "no such file",
	} {
		if _, err := tx.StageRoot(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("StageRoot(%s): %v, want %q", path, err, want)
		}
	}
	_, err = tx.StageRoot(extra)
	must(t, err)
	must(t, os.Mkdir(filepath.Join(extra, "sub"), 0o755))
	if _, err := tx.StageRoot(filepath.Join(extra, "sub")); err == nil || !strings.Contains(err.Error(), "overlaps the staged root") {
		t.Errorf("a root inside a root: %v", err)
	}
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"true"}, Mode: ModeCopy, Notice: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "need the overlay booth") || res.ExitCode != -1 {
		t.Errorf("copy mode with a staged root: %+v %v", res, err)
	}
	must(t, tx.Rollback(ctx))
}
