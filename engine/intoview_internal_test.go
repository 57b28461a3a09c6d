//go:build linux

package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/sandbox"
)

// viewed is an SDK transaction set of a booth run whose agent's view is
// view, a folder of its own (the booth's transaction bt over another).
func viewed(t *testing.T) (txs *sdkTxs, bt *sandbox.Tx, view string) {
	t.Helper()
	bt, err := sandbox.Begin(t.TempDir(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bt.Rollback(context.Background()) })
	view = t.TempDir()
	root, err := os.OpenRoot(view)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	txs = &sdkTxs{session: &session{}}
	txs.boothView(bt)(root)
	return txs, bt, view
}

// TestIntoViewKeepsInsideTheWorkspace: the changes a commit writes into
// the agent's view come from the agent's transaction, or, in a replay,
// from the tape's file.change frames, which a hostile tape may fill with
// any path. None is written outside the view: a path that climbs out, an
// absolute one, one through a link the agent planted that leads out; the
// error names the change and says what was written before it.
func TestIntoViewKeepsInsideTheWorkspace(t *testing.T) {
	txs, bt, view := viewed(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(view, "out")); err != nil {
		t.Fatal(err)
	}
	content := func(*sandbox.Change) func() ([]byte, error) {
		return func() ([]byte, error) { return []byte("planted"), nil }
	}
	for _, path := range []string{"../escaped.txt", "a/../../escaped.txt", filepath.Join(outside, "escaped.txt"), "out/escaped.txt"} {
		cs := sandbox.ChangeSet{Changes: []sandbox.Change{
			{Path: "first.txt", Op: sandbox.OpWrite, Mode: 0o644},
			{Path: path, Op: sandbox.OpWrite, Mode: 0o644},
		}}
		applied, err := txs.intoView("tx-hostile", cs, content, nil)
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
	if applied, err := txs.intoView("tx-late", sandbox.ChangeSet{Changes: []sandbox.Change{{Path: "late.txt", Op: sandbox.OpWrite}}}, content, nil); applied || err != nil {
		t.Fatalf("a commit once the view was withdrawn: applied %v, %v", applied, err)
	}
}

// TestIntoViewChecksWhatTheAgentSaw: a write staged on a file as the
// agent saw it in its view, which the agent then wrote again, was written
// over it at the commit, unchecked, where outside the booth it is a
// conflict. It is a conflict in the booth too, nothing written; a file
// as it was when staged is written.
func TestIntoViewChecksWhatTheAgentSaw(t *testing.T) {
	txs, _, view := viewed(t)
	content := func(*sandbox.Change) func() ([]byte, error) {
		return func() ([]byte, error) { return []byte("committed"), nil }
	}
	cs := sandbox.ChangeSet{Changes: []sandbox.Change{{Path: "notes.txt", Op: sandbox.OpWrite, Mode: 0o644}}}
	// Staged when there was no notes.txt; the agent wrote one since.
	if err := os.WriteFile(filepath.Join(view, "notes.txt"), []byte("the agent's own"), 0o644); err != nil {
		t.Fatal(err)
	}
	applied, err := txs.intoView("tx-1", cs, content, map[string]controlapi.FileBase{"notes.txt": {}})
	if !applied || err == nil || !strings.Contains(err.Error(), "created in the booth after it was staged") {
		t.Fatalf("a file the agent made after staging: applied %v, %v", applied, err)
	}
	if b, _ := os.ReadFile(filepath.Join(view, "notes.txt")); string(b) != "the agent's own" {
		t.Fatalf("the agent's file was written over: %q", b)
	}
	// Staged on the file as it is now: written.
	st, err := os.Lstat(filepath.Join(view, "notes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	base := controlapi.FileBase{Exists: true, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
	if _, err := txs.intoView("tx-2", cs, content, map[string]controlapi.FileBase{"notes.txt": base}); err != nil {
		t.Fatalf("a file as it was staged: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(view, "notes.txt")); string(b) != "committed" {
		t.Fatalf("the commit: %q", b)
	}
}
