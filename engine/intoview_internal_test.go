//go:build linux

package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/sandbox"
)

// TestIntoViewKeepsInsideTheWorkspace: the changes a commit writes into
// the agent's view come from the agent's transaction, or, in a replay,
// from the tape's file.change frames, which a hostile tape may fill with
// any path. None is written outside the view: a path that climbs out, an
// absolute one, one through a link the agent planted that leads out; the
// error names the change and says what was written before it.
func TestIntoViewKeepsInsideTheWorkspace(t *testing.T) {
	ws, view, outside := t.TempDir(), t.TempDir(), t.TempDir()
	bt, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bt.Rollback(t.Context())
	if err := os.Symlink(outside, filepath.Join(view, "out")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(view)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	txs := &sdkTxs{session: &session{}}
	txs.boothView(bt)(root)
	content := func(*sandbox.Change) func() ([]byte, error) {
		return func() ([]byte, error) { return []byte("planted"), nil }
	}
	for _, path := range []string{"../escaped.txt", "a/../../escaped.txt", filepath.Join(outside, "escaped.txt"), "out/escaped.txt"} {
		cs := sandbox.ChangeSet{Changes: []sandbox.Change{
			{Path: "first.txt", Op: sandbox.OpWrite, Mode: 0o644},
			{Path: path, Op: sandbox.OpWrite, Mode: 0o644},
		}}
		applied, err := txs.intoView("tx-hostile", cs, content)
		if !applied || err == nil {
			t.Fatalf("%s: written (applied %v, %v)", path, applied, err)
		}
		want := "1 change before it in the agent's view"
		if path == "out/escaped.txt" {
			want = "which is no folder in the booth" // refused before anything is written
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", path, err, want)
		}
	}
	for _, dir := range []string{filepath.Dir(view), outside} {
		if _, err := os.Stat(filepath.Join(dir, "escaped.txt")); err == nil {
			t.Fatalf("a change was written to %s", dir)
		}
	}
	if b, err := os.ReadFile(filepath.Join(view, "first.txt")); err != nil || string(b) != "planted" {
		t.Fatalf("the change inside the view: %q %v", b, err)
	}
	txs.boothView(bt)(nil)
	if applied, err := txs.intoView("tx-late", sandbox.ChangeSet{Changes: []sandbox.Change{{Path: "late.txt", Op: sandbox.OpWrite}}}, content); applied || err != nil {
		t.Fatalf("a commit once the view was withdrawn: applied %v, %v", applied, err)
	}
}
