//go:build linux

package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var ctx = context.Background()

func sampleTree() map[string]string {
	return map[string]string{
		"README.md":       "hello\n",
		"src/main.go":     "package main\n",
		"src/util.go":     "package util\n",
		"old/a.txt":       "a",
		"old/deep/b.txt":  "b",
		"keep/c.txt":      "c",
		"link":            "-> src/main.go",
		"data/app.sqlite": "SQLite format 3\x00 pretend",
	}
}

// stageMixed stages one of every kind of change.
func stageMixed(t *testing.T, tx *Tx) {
	t.Helper()
	must(t, tx.Files().WriteFile("src/main.go", []byte("package main // v2\n"), 0o644))
	must(t, tx.Files().MkdirAll("new/dir", 0o755))
	must(t, tx.Files().WriteFile("new/dir/n.txt", []byte("new"), 0o600))
	must(t, tx.Files().Remove("src/util.go"))
	must(t, tx.Files().RemoveAll("keep"))
	must(t, tx.Files().Mkdir("keep", 0o750))
	must(t, tx.Files().WriteFile("keep/fresh.txt", []byte("fresh"), 0o644))
	must(t, tx.Files().RemoveAll("old"))
	must(t, tx.Files().Chmod("README.md", 0o600))
	must(t, tx.Files().Symlink("README.md", "readme-link"))
}

func TestCommitAppliesEveryKindOfChange(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	var events []EventKind
	tx, err := Begin(ws, Options{Observer: func(e Event) { events = append(events, e.Kind) }})
	must(t, err)
	if err := tx.Files().WriteFile("new/dir/n.txt", nil, 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	stageMixed(t, tx)
	cs, err := tx.Diff()
	must(t, err)
	want := `chmod README.md
replace-dir keep
delete keep/c.txt (implied)
write keep/fresh.txt
mkdir new
mkdir new/dir
write new/dir/n.txt
delete old
delete old/a.txt (implied)
delete old/deep (implied)
delete old/deep/b.txt (implied)
symlink readme-link
write src/main.go
delete src/util.go`
	if got := ops(cs); got != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", got, want)
	}
	before := readTree(t, ws)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, ws)
	if got["src/main.go"] != "package main // v2\n" || got["keep/fresh.txt"] != "fresh" || got["new/dir/n.txt"] != "new" {
		t.Fatalf("commit did not apply writes: %v", got)
	}
	for _, gone := range []string{"src/util.go", "old/", "keep/c.txt"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s survived commit", gone)
		}
	}
	if fi, _ := os.Stat(filepath.Join(ws, "README.md")); fi.Mode().Perm() != 0o600 {
		t.Errorf("README.md mode %v", fi.Mode())
	}
	if got["readme-link"] != "-> README.md" || before["link"] != got["link"] {
		t.Errorf("symlinks wrong: %q %q", got["readme-link"], got["link"])
	}
	if _, err := os.Stat(tx.StateDir()); !os.IsNotExist(err) {
		t.Errorf("state dir left behind: %v", err)
	}
	if n := len(events); n != 2+len(cs.Changes) || events[0] != EventBegin || events[n-1] != EventCommit {
		t.Errorf("events %v", events)
	}
}

func TestRollbackLeavesTreeBitIdentical(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	if got := treeHash(t, ws); got != before {
		t.Fatal("staging touched the real workspace")
	}
	data, err := tx.Files().ReadFile("src/main.go")
	if err != nil || string(data) != "package main // v2\n" {
		t.Fatalf("staged view: %q %v", data, err)
	}
	if _, err := tx.Files().Stat("src/util.go"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file visible: %v", err)
	}
	must(t, tx.Rollback(ctx))
	if got := treeHash(t, ws); got != before {
		t.Fatal("rollback changed the workspace")
	}
	if err := tx.Files().WriteFile("x", nil, 0o644); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after rollback: %v", err)
	}
}

func TestReadDirMergesLayers(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(tx.begin.wait) // Begin's names read writes into the workspace until it ends
	stageMixed(t, tx)
	list, err := tx.Files().ReadDir(".")
	must(t, err)
	var names []string
	for _, fi := range list {
		names = append(names, fi.Name())
	}
	want := ".jukebox README.md data keep link new readme-link src"
	if got := joinNames(names); got != want {
		t.Fatalf("readdir: %q want %q", got, want)
	}
	list, _ = tx.Files().ReadDir("keep")
	if len(list) != 1 || list[0].Name() != "fresh.txt" {
		t.Fatalf("opaque dir shows lower entries: %v", list)
	}
}

func joinNames(n []string) string {
	s := ""
	for i, x := range n {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}

func TestSavepoints(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(tx.begin.wait) // Begin's names read writes into the workspace until it ends
	must(t, tx.Files().WriteFile("one.txt", []byte("1"), 0o644))
	must(t, tx.Savepoint(ctx, "a"))
	must(t, tx.Files().WriteFile("two.txt", []byte("2"), 0o644))
	must(t, tx.Files().Remove("README.md"))
	must(t, tx.Savepoint(ctx, "b"))
	must(t, tx.Files().WriteFile("three.txt", []byte("3"), 0o644))
	must(t, tx.RollbackTo(ctx, "a"))
	cs, err := tx.Diff()
	must(t, err)
	if got := ops(cs); got != "write one.txt" {
		t.Fatalf("after rollback to a: %s", got)
	}
	if err := tx.RollbackTo(ctx, "b"); !errors.Is(err, ErrNoSavepoint) {
		t.Fatalf("released savepoint: %v", err)
	}
	must(t, tx.Files().WriteFile("four.txt", []byte("4"), 0o644))
	must(t, tx.RollbackTo(ctx, "a"))
	cs, _ = tx.Diff()
	if got := ops(cs); got != "write one.txt" {
		t.Fatalf("second rollback to a: %s", got)
	}
}

func TestCommitRefusesConflicts(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("src/main.go", []byte("mine"), 0o644))
	must(t, tx.Files().Remove("old/a.txt"))
	must(t, tx.Files().WriteFile("brand-new.txt", []byte("mine"), 0o644))
	must(t, tx.Files().WriteFile("keep/c.txt", []byte("mine"), 0o644))
	// The real side moves on.
	must(t, os.WriteFile(filepath.Join(ws, "src/main.go"), []byte("theirs"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "old/a.txt"), []byte("theirs"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "brand-new.txt"), []byte("theirs"), 0o644))
	before := treeHash(t, ws)
	_, err = tx.Commit(ctx)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("commit: %v", err)
	}
	var paths []string
	for _, c := range ce.Conflicts {
		paths = append(paths, c.Path)
	}
	if got := joinNames(paths); got != "brand-new.txt old/a.txt src/main.go" {
		t.Fatalf("conflicts %q (%v)", got, err)
	}
	if treeHash(t, ws) != before {
		t.Fatal("refused commit changed the workspace")
	}
	must(t, tx.Rollback(ctx))
}

func TestOpenAndList(t *testing.T) {
	ws := t.TempDir()
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a", []byte("x"), 0o644))
	infos, err := List(ws, Options{})
	must(t, err)
	if len(infos) != 1 || infos[0].ID != tx.ID() {
		t.Fatalf("list: %+v", infos)
	}
	tx.Release() // its process ended
	tx2, err := Open(ws, tx.ID(), Options{})
	must(t, err)
	cs, err := tx2.Diff()
	must(t, err)
	if ops(cs) != "write a" {
		t.Fatalf("reopened diff: %s", ops(cs))
	}
	if _, err := Open(ws, "../x", Options{}); !errors.Is(err, ErrNoTx) {
		t.Fatalf("open ../x: %v", err)
	}
	_, err = tx2.Commit(ctx)
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "x" {
		t.Fatal("not committed")
	}
}

// TestConcurrentBeginsAndRollbacks: transactions begun while others
// roll back in the same workspace all begin. The last one to end prunes
// the empty state folders (.jukebox/booth), and a Begin that had just
// made them found its own folder's parent gone ("begin: mkdir
// .../.jukebox/booth/tx-...: no such file or directory", seen in the
// Python SDK's concurrent tracks on CI).
func TestConcurrentBeginsAndRollbacks(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 150 {
				tx, err := Begin(ws, Options{})
				if err != nil {
					errs <- err
					return
				}
				if err := tx.Rollback(ctx); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := treeHash(t, ws); got != before {
		t.Error("the workspace changed")
	}
}

// TestCommitKeepsWhatItWasToldTo: a commit that changes a kept file, its
// folder, or replaces a folder above it is refused before anything is
// applied, the transaction left open; a folder's mode above it is not.
func TestCommitKeepsWhatItWasToldTo(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a/tapes/run.jbx": "tape", "a/other.txt": "x"})
	tape := filepath.Join(ws, "a", "tapes", "run.jbx")
	for name, stage := range map[string]func(f *Files) error{
		"the file":          func(f *Files) error { return f.WriteFile("a/tapes/run.jbx", []byte("garbage"), 0o644) },
		"beside it":         func(f *Files) error { return f.WriteFile("a/tapes/planted.jbx", []byte("x"), 0o644) },
		"its deletion":      func(f *Files) error { return f.Remove("a/tapes/run.jbx") },
		"a folder above it": func(f *Files) error { return f.RemoveAll("a") },
	} {
		tx, err := Begin(ws, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tx.Keep([]string{tape})
		if err := stage(tx.Files()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := tx.Commit(context.Background()); !errors.Is(err, ErrKept) || tx.Closed() {
			t.Errorf("%s: commit %v, closed %v", name, err, tx.Closed())
		}
		if err := tx.Rollback(context.Background()); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(tape); err != nil || string(b) != "tape" {
			t.Fatalf("%s: the kept file is %q, %v", name, b, err)
		}
	}
	tx, err := Begin(ws, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx.Keep([]string{tape})
	if err := tx.Files().Chmod("a", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := tx.Files().WriteFile("a/other.txt", []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("a change beside the kept folder: %v", err)
	}
}
