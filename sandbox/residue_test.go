//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestRealHardLinkPairRefused: a write to a real file that has another
// name (an existing hard-link pair) is refused, as README says, in-process
// and in the copy fallback alike: committing it would split the pair, the
// other name keeping the old content. The pair stays linked and unchanged.
func TestRealHardLinkPairRefused(t *testing.T) {
	for _, mode := range []string{"files", "copy", "overlay"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "overlay" {
				requireOverlay(t)
			}
			ws := filepath.Join(t.TempDir(), "ws")
			mkTree(t, ws, map[string]string{"a": "old\n", "other.txt": "o"})
			must(t, os.Link(filepath.Join(ws, "a"), filepath.Join(ws, "b")))
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			if mode == "files" {
				must(t, tx.Files().WriteFile("a", []byte("new\n"), 0o644))
				must(t, tx.Files().WriteFile("other.txt", []byte("p"), 0o644))
			} else {
				res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `echo new > a; echo p > other.txt`}, Mode: Mode(mode), Notice: &bytes.Buffer{}})
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("exec: %v, exit %d", err, res.ExitCode)
				}
			}
			cs, err := tx.Diff()
			must(t, err)
			if len(cs.Refused) != 1 || cs.Refused[0].Path != "a" || cs.Refused[0].Kind != RefusedHardLink {
				t.Fatalf("refused %+v, want a (hard link); changes %s", cs.Refused, ops(cs))
			}
			_, err = tx.Commit(ctx)
			must(t, err)
			fa, err := os.Stat(filepath.Join(ws, "a"))
			must(t, err)
			fb, err := os.Stat(filepath.Join(ws, "b"))
			must(t, err)
			if got := readTree(t, ws); got["a"] != "old\n" || got["b"] != "old\n" || !os.SameFile(fa, fb) {
				t.Errorf("the pair: a %q, b %q, still linked %v", got["a"], got["b"], os.SameFile(fa, fb))
			}
		})
	}
}

// TestRealPairLinkedAgainRefused: the agent gave the real pair's file a
// third name before writing it (ln a z; echo more >> a): the group a, z
// was committed, and b, the pair's other name, kept the old content, split
// from a without a word. It is refused as a write to the pair is.
func TestRealPairLinkedAgainRefused(t *testing.T) {
	requireOverlay(t)
	ws := filepath.Join(t.TempDir(), "ws")
	mkTree(t, ws, map[string]string{"a": "old\n"})
	must(t, os.Link(filepath.Join(ws, "a"), filepath.Join(ws, "b")))
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", `ln a z && echo more >> a`}, Mode: ModeOverlay, Notice: &bytes.Buffer{}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v, exit %d", err, res.ExitCode)
	}
	cs, err := tx.Diff()
	must(t, err)
	refused := map[string]bool{}
	for _, r := range cs.Refused {
		refused[r.Path] = r.Kind == RefusedHardLink
	}
	if !refused["a"] || !refused["z"] {
		t.Fatalf("refused %+v, want a and z (hard link); changes %s", cs.Refused, ops(cs))
	}
	_, err = tx.Commit(ctx)
	must(t, err)
	fa, _ := os.Stat(filepath.Join(ws, "a"))
	fb, _ := os.Stat(filepath.Join(ws, "b"))
	if got := readTree(t, ws); got["a"] != "old\n" || got["b"] != "old\n" || !os.SameFile(fa, fb) {
		t.Errorf("the pair: a %q, b %q, still linked %v", got["a"], got["b"], os.SameFile(fa, fb))
	}
}

// TestCommitKeepsLinkTimeOwnerRootMode: what a plain run leaves, the
// commit leaves, in the overlay booth and the copy fallback: a symlink's
// own mtime (touch -h), a file's owner changed by a root agent (chown),
// and the workspace folder's own mode (chmod .).
func TestCommitKeepsLinkTimeOwnerRootMode(t *testing.T) {
	for _, mode := range []Mode{ModeOverlay, ModeCopy} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == ModeOverlay {
				requireOverlay(t)
			}
			ws := filepath.Join(t.TempDir(), "ws")
			mkTree(t, ws, map[string]string{"f": "f", "g": "g"})
			must(t, os.Symlink("f", filepath.Join(ws, "link")))
			must(t, os.Chmod(ws, 0o755))
			tx, err := Begin(ws, Options{})
			must(t, err)
			defer tx.Rollback(ctx)
			script := `set -e; touch -h -d @1500000000 link; chmod 750 .`
			if os.Getuid() == 0 {
				script += `; chown 65534:65534 g`
			}
			var out bytes.Buffer
			res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", script}, Mode: mode, Stdout: &out, Stderr: &out, Notice: &bytes.Buffer{}})
			must(t, err)
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, out.String())
			}
			_, err = tx.Commit(ctx)
			must(t, err)
			if fi, err := os.Lstat(filepath.Join(ws, "link")); err != nil || fi.ModTime().Unix() != 1500000000 {
				t.Errorf("link's mtime after commit: %v (%v), want 1500000000", fi.ModTime().Unix(), err)
			}
			if fi, err := os.Stat(ws); err != nil || fi.Mode().Perm() != 0o750 {
				t.Errorf("the workspace folder's mode after commit: %v (%v), want 0750", fi.Mode().Perm(), err)
			}
			if os.Getuid() == 0 {
				fi, err := os.Stat(filepath.Join(ws, "g"))
				must(t, err)
				if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
					t.Errorf("g's owner after commit: %d:%d, want 65534:65534", st.Uid, st.Gid)
				}
			}
		})
	}
}

// TestRootModeCrashAtEveryStep: a commit that changes the workspace
// folder's own mode, stopped at each step as a crash would stop it, is
// recovered to all or nothing (the journal's chmod of "." is accepted).
func TestRootModeCrashAtEveryStep(t *testing.T) {
	stage := func(t *testing.T) string {
		ws := filepath.Join(t.TempDir(), "ws")
		mkTree(t, ws, map[string]string{"f": "v1\n"})
		must(t, os.Chmod(ws, 0o755))
		return ws
	}
	begin := func(t *testing.T, ws string) *Tx {
		tx, err := Begin(ws, Options{})
		must(t, err)
		up := filepath.Join(tx.StateDir(), "upper")
		must(t, os.Chmod(up, 0o750))
		must(t, os.WriteFile(filepath.Join(up, "f"), []byte("v2\n"), 0o644))
		return tx
	}
	var steps []string
	failpoint = func(s string) error { steps = append(steps, s); return nil }
	_, err := begin(t, stage(t)).Commit(ctx)
	failpoint = nil
	must(t, err)
	seen := map[string]int{}
	for _, step := range steps {
		ws := stage(t)
		tx := begin(t, ws)
		failpoint = crashAt(step)
		_, err := tx.Commit(ctx)
		if !errors.Is(err, ErrCrash) {
			failpoint = nil
			t.Fatalf("step %s: commit: %v", step, err)
		}
		failpoint = crashAt("apply-1")
		Recover(ctx, ws, Options{})
		failpoint = nil
		if _, err := Recover(ctx, ws, Options{}); err != nil {
			t.Fatalf("step %s: recover: %v", step, err)
		}
		fi, err := os.Stat(ws)
		must(t, err)
		switch got := fmt.Sprintf("%o %s", fi.Mode().Perm(), readTree(t, ws)["f"]); got {
		case "755 v1\n":
			seen["old"]++
		case "750 v2\n":
			seen["new"]++
		default:
			t.Errorf("step %s: after recovery %q, want all old or all new", step, got)
		}
	}
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("outcomes %v over steps %v: want both old and new", seen, steps)
	}
}
