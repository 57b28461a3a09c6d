//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// runPlain runs script with sh in dir, outside any booth: what a booth
// run's commit is compared with.
func runPlain(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("plain run of %s: %v\n%s", script, err, out)
	}
}

// TestRenamesCommitBesideUserWork: a rename commits as a plain run leaves
// it while the user adds files in the same folders during the run (the
// folder's change time then says nothing; the names read at Begin do).
func TestRenamesCommitBesideUserWork(t *testing.T) {
	requireOverlay(t)
	for _, tc := range []struct{ script, user string }{
		{"mv a.txt new.txt", "other.txt"},
		{"mv dir/x.txt dir/x2.txt", "dir/mine"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			ws, plain := t.TempDir(), t.TempDir()
			renameFixture(t, ws)
			renameFixture(t, plain)
			tx := runInBooth(t, ws, tc.script)
			must(t, os.WriteFile(filepath.Join(ws, tc.user), []byte("u"), 0o644))
			must(t, os.WriteFile(filepath.Join(plain, tc.user), []byte("u"), 0o644))
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
