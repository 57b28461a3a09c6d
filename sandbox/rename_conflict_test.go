//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runOverlay runs script with sh in tx's overlay and fails the test on
// anything but exit 0.
func runOverlay(t *testing.T, tx *Tx, script string) {
	t.Helper()
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Mode: ModeOverlay, Notice: io.Discard})
	if err != nil || res.Mode != ModeOverlay || res.ExitCode != 0 {
		t.Fatalf("%s: %v %+v", script, err, res)
	}
}

// TestRenamesCommit: renames and moves of every kind, made by a child in
// the kernel overlay, commit as a plain run would leave them (a renamed
// file's copy-up carries the origin of its old name, which was read as
// a real-side delete of the new one, so the commit failed every time).
func TestRenamesCommit(t *testing.T) {
	requireOverlay(t)
	start := map[string]string{"a.txt": "a", "c.txt": "c", "run.sh": "r", "sub/deep/d.txt": "d", "dir/x": "x", "dir/y/z": "z"}
	for _, tc := range []struct{ name, script, user string }{
		{"mv", "mv a.txt b.txt", ""},
		{"mv into a parent", "mv sub/deep/d.txt sub/d.txt", ""},
		{"mv over an existing file", "mv a.txt c.txt", ""},
		{"folder rename", "mv dir dir2", ""},
		{"folder into another", "mv dir sub/deep/", ""},
		{"link then remove", "ln a.txt b.txt && rm a.txt", ""},
		{"sed -i", "sed -i s/c/C/ c.txt", ""},
		{"rename back and forth", "mv run.sh tools.sh && mv tools.sh run2.sh", ""},
		{"mv while the user adds a file beside", "mv a.txt b.txt", "other.txt"},
		{"mv while the user adds a file in the folder", "mv dir/x dir/x2", "dir/mine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, plain := t.TempDir(), t.TempDir()
			mkTree(t, ws, start)
			mkTree(t, plain, start)
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			runOverlay(t, tx, tc.script)
			if tc.user != "" { // the user works beside the agent
				must(t, os.WriteFile(filepath.Join(ws, tc.user), []byte("u"), 0o644))
				must(t, os.WriteFile(filepath.Join(plain, tc.user), []byte("u"), 0o644))
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			runPlain(t, plain, tc.script)
			if got, want := fmt.Sprint(readTree(t, ws)), fmt.Sprint(readTree(t, plain)); got != want {
				t.Fatalf("committed %s\nplain run %s", got, want)
			}
		})
	}
}

func runPlain(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", script, err, out)
	}
}

// TestRealSideDeleteUnderRename: a file the agent rewrote by renaming
// over it (sed -i, an editor's atomic save, mv over it, rm and write
// again, a symlink retargeted) and the user deleted during the run is a
// conflict, never written back; the same save with the user's folder
// otherwise touched, or no user change, is none.
func TestRealSideDeleteUnderRename(t *testing.T) {
	requireOverlay(t)
	for _, tc := range []struct{ name, script string }{
		{"sed -i", "sed -i s/f/F/ f"},
		{"atomic save", "echo new > .f.tmp && mv .f.tmp f"},
		{"mv over", "echo new > g && mv g f"},
		{"rm and recreate", "rm f && echo new > f"},
		{"symlink retargeted", "ln -sfn other f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			mkTree(t, ws, map[string]string{"f": "f", "other": "o"})
			tx, err := Begin(ws, Options{})
			must(t, err)
			tx.begin.wait() // the names at Begin read before the user changes anything
			defer tx.Rollback(ctx)
			runOverlay(t, tx, tc.script)
			must(t, os.Remove(filepath.Join(ws, "f")))
			before := treeHash(t, ws)
			_, err = tx.Commit(ctx)
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "f" || ce.Conflicts[0].Reason != "deleted since begin" {
				t.Fatalf("commit: %v", err)
			}
			if treeHash(t, ws) != before || tx.Closed() {
				t.Fatal("the refused commit changed the workspace or closed the transaction")
			}
		})
	}
}
