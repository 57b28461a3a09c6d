//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// renameFixture is the tree every rename case starts from.
func renameFixture(t *testing.T, root string) {
	mkTree(t, root, map[string]string{
		"a.txt": "a", "b.txt": "b", "f.txt": "f", "run.sh": "echo run",
		"sub/deep/d.txt": "d", "sub/deep/e.txt": "e", "dir/x.txt": "x",
	})
	must(t, os.Symlink("a.txt", filepath.Join(root, "link")))
}

// renameCases are the renames, moves and link changes an agent makes.
var renameCases = []struct{ name, script string }{
	{"mv", "mv a.txt new.txt"},
	{"mv over a file", "mv a.txt b.txt"},
	{"mv up a level", "mv sub/deep/d.txt sub/d.txt"},
	{"mv into a new folder", "mkdir n && mv a.txt n/a.txt"},
	{"directory rename", "mv sub/deep sub/deeper"},
	{"directory move", "mv dir sub/dir2"},
	{"swap", "mv a.txt t && mv b.txt a.txt && mv t b.txt"},
	{"ln and rm", "ln a.txt c.txt && rm a.txt"},
	{"ln", "ln a.txt c.txt"},
	{"sed -i", "sed -i s/f/F/ f.txt"},
	{"atomic save", "echo g > .f.tmp && mv .f.tmp f.txt"},
	{"rm and recreate", "rm f.txt && echo again > f.txt"},
	{"symlink retarget", "ln -sfn b.txt link"},
	{"git mv", "git init -q . && git add -A && git mv run.sh tools.sh"},
}

// TestRenamesCommit: every kind of rename an agent makes in the overlay
// booth commits, and leaves the tree a plain run leaves.
func TestRenamesCommit(t *testing.T) {
	requireOverlay(t)
	for _, c := range renameCases {
		t.Run(c.name, func(t *testing.T) {
			plain := t.TempDir()
			renameFixture(t, plain)
			runPlain(t, plain, c.script)
			ws := t.TempDir()
			renameFixture(t, ws)
			tx := runInBooth(t, ws, c.script)
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if d := diffSnaps(snapTree(t, plain), snapTree(t, ws)); d != "" && c.name != "git mv" {
				t.Errorf("committed tree differs from a plain run (- plain, + booth):\n%s", d)
			}
			if got := readTree(t, ws); c.name == "git mv" && (got["tools.sh"] != "echo run" || got["run.sh"] != "") {
				t.Errorf("git mv: %v", got)
			}
		})
	}
}

// runInBooth begins a transaction over ws and runs script in the overlay
// booth; the transaction is rolled back at the end of the test.
func runInBooth(t *testing.T, ws, script string) *Tx {
	t.Helper()
	tx, err := Begin(ws, Options{})
	must(t, err)
	tx.begin.wait() // the names at Begin read before the user changes anything
	t.Cleanup(func() { tx.Rollback(ctx) })
	var out bytes.Buffer
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Env: env, Stdout: &out, Stderr: &out, Mode: ModeOverlay, Notice: &bytes.Buffer{}})
	must(t, err)
	if res.ExitCode != 0 || res.Mode != ModeOverlay {
		t.Fatalf("booth run: exit %d, mode %s\n%s", res.ExitCode, res.Mode, out.String())
	}
	return tx
}

// TestRealSideChangeOfRenamedPathConflicts: whatever the user does on the
// real side to a path the agent changed by rename (deletes it, writes
// it, replaces it by a rename of their own), after the run and before
// the commit, is a conflict that leaves the real side as the user made it.
func TestRealSideChangeOfRenamedPathConflicts(t *testing.T) {
	requireOverlay(t)
	user := map[string]func(ws, p string) error{
		"delete":  func(_, p string) error { return os.Remove(p) },
		"write":   func(_, p string) error { return os.WriteFile(p, []byte("user"), 0o644) },
		"replace": func(ws, p string) error { return os.Rename(filepath.Join(ws, "b.txt"), p) },
	}
	agent := map[string]struct{ script, path string }{
		"sed -i":            {"sed -i s/f/F/ f.txt", "f.txt"},
		"atomic save":       {"echo g > .f.tmp && mv .f.tmp f.txt", "f.txt"},
		"mv over":           {"mv a.txt f.txt", "f.txt"},
		"rm and recreate":   {"rm f.txt && echo again > f.txt", "f.txt"},
		"in place":          {"echo more >> f.txt", "f.txt"},
		"rm":                {"rm f.txt", "f.txt"},
		"symlink retarget":  {"ln -sfn b.txt link", "link"},
		"mv, then its name": {"mv a.txt sub/deep/d.txt", "sub/deep/d.txt"},
	}
	for an, a := range agent {
		for un, change := range user {
			if an == "symlink retarget" && un == "write" {
				continue // a write goes through the link to a.txt
			}
			t.Run(an+"/"+un, func(t *testing.T) {
				ws := t.TempDir()
				renameFixture(t, ws)
				tx := runInBooth(t, ws, a.script)
				must(t, change(ws, filepath.Join(ws, a.path)))
				before := treeHash(t, ws)
				_, err := tx.Commit(ctx)
				if an == "rm" && un == "delete" { // deleted on both sides: they agree
					must(t, err)
					return
				}
				var ce *ConflictError
				if !errors.As(err, &ce) || !hasConflict(ce, a.path) {
					t.Fatalf("commit: %v", err)
				}
				if treeHash(t, ws) != before || tx.Closed() {
					t.Fatal("the refused commit changed the workspace or closed the transaction")
				}
			})
		}
	}
}

func hasConflict(ce *ConflictError, p string) bool {
	for _, c := range ce.Conflicts {
		if c.Path == p {
			return true
		}
	}
	return false
}

// ovlOrigin is the origin xattr overlayfs gives a copy-up of real.
func ovlOrigin(t *testing.T, real string) []byte {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, real, 0)
	must(t, err)
	fb := append([]byte{0, 0xfb, byte(21 + len(h.Bytes())), 0, byte(h.Type())}, make([]byte, 16)...)
	return append(fb, h.Bytes()...)
}

// TestRenameWhileFolderChanged: a rename the agent made commits even when
// the user added a file to the same folder during the run (no note of
// the run's end to lean on): the new name's origin is the old name's
// inode, still there. A copy-up in place whose original the user deleted
// is still a conflict.
func TestRenameWhileFolderChanged(t *testing.T) {
	for _, names := range []bool{true, false} {
		t.Run(fmt.Sprintf("names=%v", names), func(t *testing.T) {
			ws := t.TempDir()
			mkTree(t, ws, map[string]string{"a.txt": "a", "f.txt": "f"})
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			if names {
				tx.begin.wait() // the folder's names read before the user's change
			} else {
				tx.begin.stop() // the user changed the folder before it was read
				tx.begin = nil
			}
			up := tx.StateDir() + "/upper"
			// What `mv a.txt new.txt` and `echo more >> f.txt` leave in the upper dir.
			must(t, os.WriteFile(up+"/new.txt", []byte("a"), 0o644))
			must(t, unix.Lsetxattr(up+"/new.txt", "user.overlay.origin", ovlOrigin(t, ws+"/a.txt"), 0))
			must(t, mkWhiteout(up+"/a.txt"))
			must(t, os.WriteFile(up+"/f.txt", []byte("f more"), 0o644))
			must(t, unix.Lsetxattr(up+"/f.txt", "user.overlay.origin", ovlOrigin(t, ws+"/f.txt"), 0))
			must(t, os.WriteFile(ws+"/user.txt", []byte("u"), 0o644))
			must(t, os.Remove(ws+"/f.txt"))
			_, err = tx.Commit(ctx)
			var ce *ConflictError
			if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || ce.Conflicts[0].Path != "f.txt" {
				t.Fatalf("commit: %v", err)
			}
			must(t, os.WriteFile(ws+"/f.txt", []byte("f"), 0o644)) // put back: the user's new f.txt is still a conflict
			must(t, os.Remove(up+"/f.txt"))
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatalf("commit of the rename alone: %v", err)
			}
			if got := readTree(t, ws); got["new.txt"] != "a" || got["a.txt"] != "" || got["user.txt"] != "u" {
				t.Fatalf("after the commit: %v", got)
			}
		})
	}
}
