//go:build linux

package sandbox

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// metaFixture is the workspace stageMeta stages over, with fixed times.
func metaFixture(t *testing.T, ws string) {
	t.Helper()
	mkTree(t, ws, map[string]string{"plain.txt": "plain\n", "old.txt": "old\n", "tagged.txt": "tagged\n",
		"written.txt": "v1\n", "keep/k.txt": "k\n", "ro.txt": "ro\n"})
	must(t, unix.Setxattr(filepath.Join(ws, "tagged.txt"), "user.tag", []byte("t"), 0))
	must(t, os.Chmod(filepath.Join(ws, "ro.txt"), 0o444))
	for _, p := range []string{"keep/k.txt", "keep", "plain.txt", "old.txt", "tagged.txt", "written.txt", "ro.txt"} {
		must(t, os.Chtimes(filepath.Join(ws, p), fidelityTime, fidelityTime))
	}
}

// stageMeta leaves in tx's staging area what a child in the kernel
// overlay leaves for: an xattr added (on a read-only file too), an xattr
// removed, an mtime-only change, a new setuid file with an xattr and a
// second name, a write over a copied-up file (overlayfs's origin on it),
// a directory made sticky with an xattr, and a new sticky directory.
func stageMeta(t *testing.T, tx *Tx) {
	t.Helper()
	ws, up := tx.Workspace(), filepath.Join(tx.StateDir(), "upper")
	cp := func(p string) string {
		must(t, copyFile(filepath.Join(ws, p), filepath.Join(up, p), 0o644))
		return filepath.Join(up, p)
	}
	must(t, unix.Setxattr(cp("plain.txt"), "user.x", []byte("1"), 0))
	must(t, os.Chtimes(cp("old.txt"), time.Time{}, time.Date(2001, 1, 1, 1, 2, 3, 456789, time.UTC)))
	must(t, unix.Removexattr(cp("tagged.txt"), "user.tag"))
	must(t, unix.Setxattr(cp("ro.txt"), "user.r", []byte("4"), 0))
	must(t, os.Chmod(filepath.Join(up, "ro.txt"), 0o444))
	n := filepath.Join(up, "new.txt")
	must(t, os.WriteFile(n, []byte("new\n"), 0o644))
	must(t, unix.Setxattr(n, "user.y", []byte("2"), 0))
	must(t, os.Chmod(n, os.ModeSetuid|0o755))
	must(t, os.Link(n, filepath.Join(up, "new-link")))
	w := filepath.Join(up, "written.txt")
	must(t, os.WriteFile(w, []byte("v2\n"), 0o644))
	must(t, unix.Setxattr(w, "user.overlay.origin", nil, 0))
	must(t, unix.Setxattr(w, "user.kept", []byte("w"), 0))
	must(t, os.Chmod(w, 0o444)) // read-only: stripping the origin needs it writable for the while
	must(t, os.Mkdir(filepath.Join(up, "keep"), 0o755))
	must(t, unix.Setxattr(filepath.Join(up, "keep"), "user.d", []byte("3"), 0))
	must(t, os.Chmod(filepath.Join(up, "keep"), os.ModeSticky|0o755))
	must(t, os.Chtimes(filepath.Join(up, "keep"), time.Time{}, fidelityTime))
	must(t, os.Mkdir(filepath.Join(up, "shared"), 0o755))
	must(t, os.Chmod(filepath.Join(up, "shared"), os.ModeSticky|0o777))
}

// metaStates are stageMeta's workspace before and after a clean commit,
// as snapTree sees them; before leaves directory times out, which an
// undo does not restore.
func metaStates(t *testing.T) (before, after []string) {
	ws := t.TempDir()
	metaFixture(t, ws)
	before = withoutDirTimes(snapTree(t, ws))
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMeta(t, tx)
	cs, err := tx.Commit(ctx)
	must(t, err)
	after = snapTree(t, ws)
	if !strings.Contains(cs.String(), "hard link to") || strings.Contains(strings.Join(after, "\n"), "overlay") {
		t.Fatalf("clean commit:\n%s\n%s", cs.String(), strings.Join(after, "\n"))
	}
	return before, after
}

func withoutDirTimes(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if _, mode, _ := strings.Cut(l, " "); strings.HasPrefix(mode, "d") {
			l = l[:strings.LastIndex(l, " mtime=")]
		}
		out[i] = l
	}
	return out
}

// metaOutcome says whether ws is as before the commit or as after it.
func metaOutcome(t *testing.T, ws string, before, after []string) string {
	t.Helper()
	got := snapTree(t, ws)
	switch {
	case diffSnaps(after, got) == "":
		return "new"
	case diffSnaps(before, withoutDirTimes(got)) == "":
		return "old"
	}
	return fmt.Sprintf("neither:\nvs old:\n%s\nvs new:\n%s", diffSnaps(before, withoutDirTimes(got)), diffSnaps(after, got))
}

// TestMetaCrashAtEveryStep stops a commit of stageMeta at each step, as
// a crash would, crashes once more inside the first Recover, then
// recovers: every mode, xattr, mtime and hard link is as before or as
// after, all of them, and no overlayfs attribute is left.
func TestMetaCrashAtEveryStep(t *testing.T) {
	before, after := metaStates(t)
	var steps []string
	failpoint = func(s string) error { steps = append(steps, s); return nil }
	ws := t.TempDir()
	metaFixture(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMeta(t, tx)
	_, err = tx.Commit(ctx)
	failpoint = nil
	must(t, err)
	seen := map[string]int{}
	for i, step := range steps {
		ws := t.TempDir()
		metaFixture(t, ws)
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMeta(t, tx)
		failpoint = crashAt(step)
		_, err = tx.Commit(ctx)
		if !errors.Is(err, ErrCrash) {
			t.Fatalf("step %s: commit: %v", step, err)
		}
		failpoint = crashAt("apply-3")
		Recover(ctx, ws, Options{})
		failpoint = nil
		if _, err := Recover(ctx, ws, Options{}); err != nil {
			t.Fatalf("step %d %s: recover: %v", i, step, err)
		}
		out := metaOutcome(t, ws, before, after)
		if out != "old" && out != "new" {
			t.Errorf("step %d %s: %s", i, step, out)
		}
		seen[out]++
	}
	t.Logf("%d steps: %v", len(steps), seen)
	if seen["old"] == 0 || seen["new"] == 0 {
		t.Errorf("outcomes %v: want both old and new", seen)
	}
}

// TestMetaApplyErrorAtEveryStep makes each step of applying stageMeta
// fail: the workspace is restored, xattrs and mtimes of the files that
// kept their inode included.
func TestMetaApplyErrorAtEveryStep(t *testing.T) {
	before, _ := metaStates(t)
	var steps []string
	failpoint = func(s string) error {
		if strings.HasPrefix(s, "aside-") || strings.HasPrefix(s, "apply-") || s == "modes" {
			steps = append(steps, s)
		}
		return nil
	}
	ws := t.TempDir()
	metaFixture(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMeta(t, tx)
	_, err = tx.Commit(ctx)
	failpoint = nil
	must(t, err)
	if len(steps) < 15 {
		t.Fatalf("too few steps: %v", steps)
	}
	for _, step := range steps {
		ws := t.TempDir()
		metaFixture(t, ws)
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMeta(t, tx)
		failpoint = failAt(step, syscall.ENOSPC)
		_, err = tx.Commit(ctx)
		failpoint = nil
		var ce *CommitError
		if !errors.As(err, &ce) || !ce.Restored {
			t.Fatalf("step %s: commit: %v", step, err)
		}
		if out := metaOutcome(t, ws, before, nil); out != "old" {
			t.Errorf("step %s: %s", step, out)
		}
		must(t, tx.Rollback(ctx))
	}
	// Failing, then crashing while undoing: Recover finishes the undo.
	for _, step := range steps {
		ws := t.TempDir()
		metaFixture(t, ws)
		tx, err := Begin(ws, Options{})
		must(t, err)
		stageMeta(t, tx)
		failpoint = func(s string) error {
			switch s {
			case step:
				return syscall.ENOSPC
			case "undo-0":
				return ErrCrash
			}
			return nil
		}
		_, err = tx.Commit(ctx)
		failpoint = nil
		if !errors.Is(err, ErrCrash) {
			continue // failed after the undo passed change 0: done above
		}
		if rep, err := Recover(ctx, ws, Options{}); err != nil || len(rep.Restored) != 1 {
			t.Fatalf("step %s: recover %+v %v", step, rep, err)
		}
		if out := metaOutcome(t, ws, before, nil); out != "old" {
			t.Errorf("step %s, crash while undoing: %s", step, out)
		}
	}
}

// TestRecoverJournalWithoutMeta recovers a decided journal as the
// release before these keys wrote it (a chmod and a write, no xattrs,
// mtime, link or dir_times): the chmod leaves the file's xattrs and
// mtime alone, and the write is linked in.
func TestRecoverJournalWithoutMeta(t *testing.T) {
	ws := t.TempDir()
	metaFixture(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(tx.begin.wait) // Begin's names read writes into the workspace until it ends
	must(t, tx.Files().Chmod("tagged.txt", 0o600))
	must(t, tx.Files().WriteFile("n.txt", []byte("n"), 0o644))
	w, err := newWorkspace(ws, Options{})
	must(t, err)
	key, err := loadKey(Options{}, w, true)
	must(t, err)
	fi, err := os.Stat(ws)
	must(t, err)
	dev, ino := devIno(fi)
	body, _ := json.Marshal(map[string]any{"tx": tx.ID(), "workspace": w.root, "dev": dev, "ino": ino, "state": "commit",
		"changes": []map[string]any{{"path": "n.txt", "op": "write", "mode": 0o644, "size": 1}, {"path": "tagged.txt", "op": "chmod", "mode": 0o600}},
		"before":  []map[string]any{{"path": "n.txt"}, {"path": "tagged.txt", "exists": true}}})
	data, _ := json.Marshal(journalFile{Format: journalFormat, MAC: hex.EncodeToString(journalMAC(key, body)), Body: body})
	must(t, os.WriteFile(filepath.Join(tx.StateDir(), journalName), data, 0o600))
	tx.Release() // its process ended
	rep, err := Recover(ctx, ws, Options{})
	if err != nil || len(rep.Committed) != 1 {
		t.Fatalf("recover: %+v %v", rep, err)
	}
	got := strings.Join(snapTree(t, ws), "\n")
	for _, want := range []string{`n.txt -rw-r--r-- `, `tagged.txt -rw------- f714d1bcd49a xattrs{user.tag="t"} mtime=2005-06-01T12:00:00Z`} {
		if !strings.Contains(got, want) {
			t.Errorf("after recovery, no %q in:\n%s", want, got)
		}
	}
}
