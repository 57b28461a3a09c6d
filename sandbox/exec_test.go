//go:build linux

package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

const childScript = `set -e
echo v2 > src/main.go
echo new > new.txt
rm src/util.go
rm -r old
mkdir old
echo y > old/y
chmod 600 README.md
ln -s README.md rl
mkdir -p a/b && echo deep > a/b/c
cat keep/c.txt
`

func runChild(t *testing.T, mode Mode) (ChangeSet, ExecResult, string) {
	t.Helper()
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(ctx)
	var out, notice bytes.Buffer
	res, err := Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", childScript}, Stdout: &out, Stderr: &out, Mode: mode, Notice: &notice})
	must(t, err)
	if res.ExitCode != 0 || out.String() != "c" {
		t.Fatalf("%s: exit %d, output %q", mode, res.ExitCode, out.String())
	}
	if treeHash(t, ws) != before {
		t.Fatalf("%s: child changed the real workspace", res.Mode)
	}
	if n := strings.Count(notice.String(), "\n"); n != 1 || !strings.Contains(notice.String(), string(res.Mode)) {
		t.Fatalf("notice %q", notice.String())
	}
	cs, err := tx.Diff()
	must(t, err)
	return cs, res, notice.String()
}

const wantChildDiff = `chmod README.md
mkdir a
mkdir a/b
write a/b/c
write new.txt
replace-dir old
delete old/a.txt (implied)
delete old/deep (implied)
delete old/deep/b.txt (implied)
write old/y
symlink rl
write src/main.go
delete src/util.go`

func TestExecCopyFallback(t *testing.T) {
	cs, res, _ := runChild(t, ModeCopy)
	if res.Mode != ModeCopy && res.Mode != ModeReflink {
		t.Fatalf("mode %s", res.Mode)
	}
	// The copy cannot tell "rm -r old; mkdir old" from editing old in
	// place, so old is merged rather than replaced: same end state.
	want := strings.Replace(wantChildDiff, "replace-dir old\n", "delete old/a.txt\ndelete old/deep\n", 1)
	want = strings.Replace(want, "delete old/a.txt (implied)\ndelete old/deep (implied)\ndelete old/deep/b.txt (implied)\n", "delete old/deep/b.txt (implied)\n", 1)
	if got := ops(cs); got != want {
		t.Fatalf("copy diff:\n%s\nwant:\n%s", got, want)
	}
}

func TestExecOverlay(t *testing.T) {
	caps := Probe(ctx, t.TempDir())
	if !caps.Overlay {
		testenv.Unavailable(t, fmt.Sprintf("overlayfs in an unprivileged user namespace, refused here (%v)", caps.Notes),
			"run on Linux with unprivileged user namespaces allowed")
	}
	cs, res, _ := runChild(t, ModeOverlay)
	if res.Mode != ModeOverlay {
		t.Fatalf("mode %s", res.Mode)
	}
	if got := ops(cs); got != wantChildDiff {
		t.Fatalf("overlay diff:\n%s\nwant:\n%s", got, wantChildDiff)
	}
}

// TestExecThenCommit runs a child, commits, and checks the real tree
// equals what a child run straight on a copy produces.
func TestExecThenCommit(t *testing.T) {
	ref := t.TempDir()
	mkTree(t, ref, sampleTree())
	cmd := exec.Command("sh", "-c", childScript)
	cmd.Dir = ref
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	for _, mode := range []Mode{ModeAuto, ModeCopy} {
		ws := t.TempDir()
		mkTree(t, ws, sampleTree())
		tx, err := Begin(ws, Options{})
		must(t, err)
		_, err = Exec(ctx, tx, ExecOptions{Args: []string{"sh", "-c", childScript}, Mode: mode, Stdout: &bytes.Buffer{}, Notice: &bytes.Buffer{}})
		must(t, err)
		_, err = tx.Commit(ctx)
		must(t, err)
		if treeHash(t, ws) != treeHash(t, ref) {
			t.Errorf("%s: committed tree differs from a direct run", mode)
		}
		if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
			t.Errorf("state left behind after the commit: %v", err)
		}
	}
}
