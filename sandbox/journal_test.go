//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// withStateHome runs the tests with XDG_STATE_HOME in a temporary
// directory, so the booth key they make is not the user's; the processes
// they start inherit it.
func withStateHome(m *testing.M) int {
	dir, err := os.MkdirTemp("", "jukebox-state-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("XDG_STATE_HOME", dir)
	return m.Run()
}

// decidedCommit stages stageMixed in a fresh workspace and stops its
// commit right after the decision, as a crash would: a journal this
// jukebox wrote, waiting for Recover.
func decidedCommit(t *testing.T, ws string) *Tx {
	t.Helper()
	mkTree(t, ws, sampleTree())
	tx, err := Begin(ws, Options{})
	must(t, err)
	stageMixed(t, tx)
	failpoint = crashAt("decided")
	_, err = tx.Commit(ctx)
	failpoint = nil
	if !errors.Is(err, ErrCrash) {
		t.Fatalf("commit: %v", err)
	}
	return tx
}

// plantLegacy writes, as an earlier release (or an attacker) would, a
// journal without a MAC, and staged content for its writes.
func plantLegacy(t *testing.T, ws, id string, changes []Change) string {
	t.Helper()
	dir := filepath.Join(ws, ".jukebox", "booth", id)
	must(t, os.MkdirAll(filepath.Join(dir, "upper"), 0o755))
	for _, c := range changes {
		if p := filepath.Join(dir, "upper", filepath.FromSlash(c.Path)); c.Op == OpWrite && strings.HasPrefix(p, dir+"/") {
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("pwned\n"), 0o755)
		}
	}
	data, err := json.Marshal(map[string]any{"tx": id, "state": "commit", "changes": changes})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, journalName), data, 0o644))
	return dir
}

// escapingChanges are what a planted journal would do outside ws (to the
// files in victim): write, delete, chmod and symlink, by "../" paths and
// by an absolute one.
func escapingChanges(t *testing.T, ws, victim string) []Change {
	up, err := filepath.Rel(ws, victim)
	must(t, err)
	up = filepath.ToSlash(up)
	return []Change{
		{Path: up + "/written", Op: OpWrite, Mode: 0o755, Size: 6},
		{Path: up + "/doomed", Op: OpDelete},
		{Path: up + "/private", Op: OpChmod, Mode: 0o777},
		{Path: up + "/link", Op: OpSymlink, Target: "/etc/passwd"},
		{Path: "../../../../../../../.." + victim + "/abs", Op: OpWrite, Mode: 0o644},
		{Path: victim + "/abs2", Op: OpWrite, Mode: 0o644},
	}
}

func victimTree(t *testing.T) (string, string) {
	victim := t.TempDir()
	mkTree(t, victim, map[string]string{"doomed": "keep me", "private": "secret"})
	must(t, os.Chmod(filepath.Join(victim, "private"), 0o600))
	return victim, treeHash(t, victim)
}

// TestPlantedJournalNotApplied: a journal that arrives with a cloned
// repository (unauthenticated, or with a MAC not made under this user's
// key) is listed and never applied, whatever its paths say.
func TestPlantedJournalNotApplied(t *testing.T) {
	victim, victimBefore := victimTree(t)
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	before := treeHash(t, ws)
	changes := escapingChanges(t, ws, victim)
	legacy := plantLegacy(t, ws, "tx-0000000000000001planted", changes)
	// A new-format journal with a MAC under some other key.
	forged := filepath.Join(ws, ".jukebox", "booth", "tx-0000000000000002forged")
	must(t, os.MkdirAll(filepath.Join(forged, "upper"), 0o755))
	w, err := newWorkspace(ws, Options{})
	must(t, err)
	must(t, writeJournal(w, forged, []byte("0123456789abcdef0123456789abcdef"), journal{State: stateCommit, Changes: changes}))
	_, err = loadKey(Options{}, w, true) // this user's key exists
	must(t, err)

	rep, err := Recover(ctx, ws, Options{})
	must(t, err)
	if len(rep.Committed)+len(rep.RolledBack)+len(rep.Restored) != 0 || len(rep.Untrusted) != 2 {
		t.Fatalf("recover acted on planted journals: %+v", rep)
	}
	if !strings.Contains(rep.Untrusted[0].Reason, "unauthenticated journal (earlier release or planted)") ||
		!strings.Contains(rep.Untrusted[1].Reason, "bad MAC") {
		t.Fatalf("reasons: %+v", rep.Untrusted)
	}
	if treeHash(t, victim) != victimBefore || treeHash(t, ws) != before {
		t.Fatalf("a planted journal changed files: victim %v, workspace %v", readTree(t, victim), readTree(t, ws))
	}
	if _, err := os.Stat(filepath.Join(legacy, journalName)); err != nil {
		t.Fatalf("planted journal gone: %v", err)
	}
	infos, err := List(ws, Options{})
	must(t, err)
	if len(infos) != 2 || infos[0].Untrusted == "" || infos[1].Untrusted == "" || infos[0].Journal != "" {
		t.Fatalf("list: %+v", infos)
	}
	if _, err := Open(ws, infos[0].ID, Options{}); err == nil {
		t.Fatal("opened a transaction holding a planted journal")
	}
	for _, info := range infos {
		must(t, Discard(ws, info.ID, Options{}))
	}
	if treeHash(t, victim) != victimBefore || treeHash(t, ws) != before {
		t.Fatal("discard changed files")
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
		t.Fatalf("state left after discarding the last transaction: %v", err)
	}
}

// TestSignedJournalWithEscapingPaths: even a journal with a valid MAC
// (were the key stolen) has its paths checked as staging checks them.
func TestSignedJournalWithEscapingPaths(t *testing.T) {
	victim, victimBefore := victimTree(t)
	ws := t.TempDir()
	mkTree(t, ws, sampleTree())
	w, err := newWorkspace(ws, Options{})
	must(t, err)
	key, err := loadKey(Options{}, w, true)
	must(t, err)
	for i, c := range append(escapingChanges(t, ws, victim),
		Change{Path: ".jukebox/booth/x", Op: OpWrite}, Change{Path: "a/./b", Op: OpDelete}, Change{Path: "ok", Op: "explode"}) {
		dir := filepath.Join(w.stateRoot, fmt.Sprintf("tx-%016x", i))
		must(t, os.MkdirAll(filepath.Join(dir, "upper"), 0o700))
		must(t, writeJournal(w, dir, key, journal{State: stateCommit, Changes: []Change{c}}))
	}
	rep, err := Recover(ctx, ws, Options{})
	must(t, err)
	if len(rep.Committed) != 0 || len(rep.Untrusted) != 9 {
		t.Fatalf("report %+v", rep)
	}
	for _, u := range rep.Untrusted {
		if !strings.Contains(u.Reason, "unsafe change") {
			t.Errorf("%s: %s", u.ID, u.Reason)
		}
	}
	if treeHash(t, victim) != victimBefore {
		t.Fatal("a signed journal wrote outside the workspace")
	}
}

// TestJournalBoundToWorkspace: a journal this jukebox wrote, copied into
// another workspace, another transaction's directory, or left in a
// workspace directory made anew at the same path, is refused.
func TestJournalBoundToWorkspace(t *testing.T) {
	src := t.TempDir()
	tx := decidedCommit(t, src)
	dst := t.TempDir()
	mkTree(t, dst, sampleTree())
	before := treeHash(t, dst)
	copyDir(t, tx.StateDir(), filepath.Join(dst, ".jukebox", "booth", tx.ID()))
	copyDir(t, tx.StateDir(), filepath.Join(src, ".jukebox", "booth", "tx-0000000000000000other"))
	rep, err := Recover(ctx, dst, Options{})
	must(t, err)
	if len(rep.Committed) != 0 || len(rep.Untrusted) != 1 || !strings.Contains(rep.Untrusted[0].Reason, "another workspace") {
		t.Fatalf("copied journal: %+v", rep)
	}
	if treeHash(t, dst) != before {
		t.Fatal("a copied journal was applied")
	}

	// The same path, a new directory: the inode differs.
	moved := src + "-old"
	must(t, os.Rename(src, moved))
	t.Cleanup(func() { os.RemoveAll(moved) })
	must(t, os.Mkdir(src, 0o755))
	mkTree(t, src, sampleTree())
	copyDir(t, filepath.Join(moved, ".jukebox"), filepath.Join(src, ".jukebox"))
	rep, err = Recover(ctx, src, Options{})
	must(t, err)
	if len(rep.Committed) != 0 || len(rep.Untrusted) != 2 {
		t.Fatalf("same path, new directory: %+v", rep)
	}
	for _, u := range rep.Untrusted {
		want := "another workspace"
		if u.ID != tx.ID() {
			want = "written for transaction"
		}
		if !strings.Contains(u.Reason, want) {
			t.Errorf("%s: %q, want %q", u.ID, u.Reason, want)
		}
	}
	if treeHash(t, src) != before {
		t.Fatal("a journal was applied to a workspace made anew")
	}

	// Where it was written, it is finished.
	rep, err = Recover(ctx, moved, Options{})
	if err == nil && len(rep.Committed) == 1 {
		t.Fatalf("the moved workspace is another workspace too: %+v", rep)
	}
}

// TestTamperedJournal: changing one byte of the body breaks the MAC.
func TestTamperedJournal(t *testing.T) {
	ws := t.TempDir()
	tx := decidedCommit(t, ws)
	before := treeHash(t, ws)
	name := filepath.Join(tx.StateDir(), journalName)
	data, err := os.ReadFile(name)
	must(t, err)
	tampered := strings.Replace(string(data), `"path":"src/util.go"`, `"path":"src/utim.go"`, 1)
	if tampered == string(data) {
		t.Fatalf("nothing to tamper with in %s", data)
	}
	must(t, os.WriteFile(name, []byte(tampered), 0o600))
	rep, err := Recover(ctx, ws, Options{})
	must(t, err)
	if len(rep.Committed) != 0 || len(rep.Untrusted) != 1 || !strings.Contains(rep.Untrusted[0].Reason, "bad MAC") {
		t.Fatalf("tampered journal: %+v", rep)
	}
	if treeHash(t, ws) != before {
		t.Fatal("a tampered journal was applied")
	}
	// The untouched original is finished as before.
	must(t, os.WriteFile(name, data, 0o600))
	rep, err = Recover(ctx, ws, Options{})
	must(t, err)
	if len(rep.Committed) != 1 {
		t.Fatalf("authentic journal not finished: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
		t.Fatalf("state (or its .lock) left behind: %v", err)
	}
}

// TestListNeverApplies: List (what booth status reads) reports an
// interrupted commit and leaves it to Recover; Discard refuses it.
func TestListNeverApplies(t *testing.T) {
	ws := t.TempDir()
	tx := decidedCommit(t, ws)
	before := treeHash(t, ws)
	infos, err := List(ws, Options{})
	must(t, err)
	if len(infos) != 1 || !infos[0].Committing || infos[0].Journal != stateCommit || infos[0].Untrusted != "" {
		t.Fatalf("list: %+v", infos)
	}
	if treeHash(t, ws) != before {
		t.Fatal("List applied the journal")
	}
	if err := Discard(ws, tx.ID(), Options{}); err == nil {
		t.Fatal("discarded an interrupted commit this jukebox journaled")
	}
	if _, err := Open(ws, tx.ID(), Options{}); err == nil {
		t.Fatal("opened a transaction in the middle of its commit")
	}
}

// TestStateRootThroughSymlink: .jukebox (or .jukebox/booth) pointing
// elsewhere is refused before anything is written or read there.
func TestStateRootThroughSymlink(t *testing.T) {
	for _, link := range []string{".jukebox", ".jukebox/booth"} {
		elsewhere := t.TempDir()
		ws := t.TempDir()
		mkTree(t, ws, map[string]string{"a.txt": "a"})
		p := filepath.Join(ws, filepath.FromSlash(link))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.Symlink(elsewhere, p))
		if _, err := Begin(ws, Options{}); !errors.Is(err, ErrEscape) {
			t.Errorf("%s: begin: %v", link, err)
		}
		if _, err := Recover(ctx, ws, Options{}); !errors.Is(err, ErrEscape) {
			t.Errorf("%s: recover: %v", link, err)
		}
		if _, err := List(ws, Options{}); !errors.Is(err, ErrEscape) {
			t.Errorf("%s: list: %v", link, err)
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
			t.Errorf("%s: state written through the symlink: %v", link, ents)
		}
	}
}

// TestBoothKey: the key is made 0600 in a 0700 directory, once; a key
// that is a symlink, readable by others, or inside the workspace is
// refused.
func TestBoothKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "jukebox")
	opts := Options{KeyFile: filepath.Join(dir, "booth.key")}
	ws := t.TempDir()
	w, err := newWorkspace(ws, opts)
	must(t, err)
	if _, err := loadKey(opts, w, false); !errors.Is(err, errNoKey) {
		t.Fatalf("no key yet: %v", err)
	}
	k1, err := loadKey(opts, w, true)
	must(t, err)
	k2, err := loadKey(opts, w, true)
	must(t, err)
	if len(k1) != keySize || string(k1) != string(k2) {
		t.Fatal("the key changed or has the wrong size")
	}
	fi, err := os.Stat(opts.KeyFile)
	must(t, err)
	di, err := os.Stat(dir)
	must(t, err)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("key %v, directory %v", fi.Mode(), di.Mode())
	}
	must(t, os.Chmod(opts.KeyFile, 0o644))
	if _, err := loadKey(opts, w, true); err == nil || !strings.Contains(err.Error(), "others") {
		t.Fatalf("group-readable key: %v", err)
	}
	must(t, os.Chmod(opts.KeyFile, 0o600))
	link := Options{KeyFile: filepath.Join(dir, "link.key")}
	must(t, os.Symlink(opts.KeyFile, link.KeyFile))
	if _, err := loadKey(link, w, true); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("symlinked key: %v", err)
	}
	inside := Options{KeyFile: filepath.Join(ws, "state", "booth.key")}
	if _, err := loadKey(inside, w, true); err == nil || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("key inside the workspace: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "state")); err == nil {
		t.Fatal("refusing a key inside the workspace made its folder there")
	}
	// A booth with a key it cannot use does not begin (the key signs
	// tx.json), and leaves nothing behind.
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	before := treeHash(t, ws)
	if _, err := Begin(ws, link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("begin with a symlinked key: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".jukebox")); !os.IsNotExist(err) {
		t.Fatalf("begin with a symlinked key left state behind: %v", err)
	}
	// A commit with a key it cannot use refuses before anything is applied.
	tx, err := Begin(ws, opts)
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("b"), 0o644))
	must(t, os.Chmod(opts.KeyFile, 0o644))
	if _, err := tx.Commit(ctx); err == nil || tx.Closed() || treeHash(t, ws) != before {
		t.Fatalf("commit with a group-readable key: %v (closed %v)", err, tx.Closed())
	}
	must(t, os.Chmod(opts.KeyFile, 0o600))
	must(t, tx.Rollback(ctx))
}

// copyDir copies a directory tree, keeping modes and symlinks.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(to), 0o700))
	out, err := exec.Command("cp", "-a", from, to).CombinedOutput()
	if err != nil {
		t.Fatalf("cp -a %s %s: %v %s", from, to, err, out)
	}
}
