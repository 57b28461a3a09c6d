//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTxMetaTrust: Open takes only a transaction whose tx.json this
// jukebox signed for this transaction in this workspace. Planted (no
// MAC), tampered, signed under another key, renamed to another id or
// copied to another workspace, it is listed with the reason, refused
// with ErrUntrusted, never committed, and Discard removes it.
func TestTxMetaTrust(t *testing.T) {
	other := Options{KeyFile: filepath.Join(t.TempDir(), "other", "booth.key")}
	cases := []struct {
		name, reason string
		spoil        func(t *testing.T, ws string, tx *Tx) (wsNow, id string)
	}{
		{"planted", "unauthenticated transaction", func(t *testing.T, ws string, tx *Tx) (string, string) {
			must(t, os.WriteFile(filepath.Join(tx.StateDir(), txName), []byte(`{"id":"`+tx.ID()+`","workspace":"`+ws+`"}`), 0o600))
			return ws, tx.ID()
		}},
		{"tampered", "bad MAC", func(t *testing.T, ws string, tx *Tx) (string, string) {
			p := filepath.Join(tx.StateDir(), txName)
			data, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, []byte(strings.Replace(string(data), `"begin_ctime_ns":`, `"begin_ctime_ns":1`, 1)), 0o600))
			return ws, tx.ID()
		}},
		{"another key", "bad MAC", func(t *testing.T, ws string, tx *Tx) (string, string) {
			w, err := newWorkspace(ws, other)
			must(t, err)
			key, err := loadKey(other, w, true)
			must(t, err)
			tx.key = key
			must(t, tx.writeMeta())
			return ws, tx.ID()
		}},
		{"renamed", "written for transaction", func(t *testing.T, ws string, tx *Tx) (string, string) {
			id := tx.ID() + "x"
			must(t, os.Rename(tx.StateDir(), filepath.Join(filepath.Dir(tx.StateDir()), id)))
			return ws, id
		}},
		{"copied", "another workspace", func(t *testing.T, ws string, tx *Tx) (string, string) {
			ws2 := t.TempDir()
			mkTree(t, ws2, map[string]string{"a.txt": "a"})
			// The names at Begin are written beside it in the background:
			// cp -a listed their temporary file and then missed it (seen
			// on CI). The copy is of the state once they are written.
			tx.begin.wait()
			copyDir(t, filepath.Join(ws, ".jukebox"), filepath.Join(ws2, ".jukebox"))
			return ws2, tx.ID()
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := t.TempDir()
			mkTree(t, ws, map[string]string{"a.txt": "a"})
			tx, err := Begin(ws, Options{})
			must(t, err)
			must(t, tx.Files().MkdirAll(".git/hooks", 0o755))
			must(t, tx.Files().WriteFile(".git/hooks/pre-commit", []byte("#!/bin/sh\n"), 0o755))
			tx.Release() // its process ended
			if open, err := Open(ws, tx.ID(), Options{}); err != nil {
				t.Fatalf("open before: %v", err)
			} else {
				open.Release()
			}
			ws, id := c.spoil(t, ws, tx)
			before := treeHash(t, ws)
			infos, err := List(ws, Options{})
			must(t, err)
			if len(infos) != 1 || infos[0].ID != id || !strings.Contains(infos[0].Untrusted, c.reason) {
				t.Fatalf("list: %+v, want untrusted %q", infos, c.reason)
			}
			if _, err := Open(ws, id, Options{}); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("open: %v", err)
			}
			if treeHash(t, ws) != before {
				t.Fatal("the workspace changed")
			}
			must(t, Discard(ws, id, Options{}))
			if infos, _ := List(ws, Options{}); len(infos) != 0 {
				t.Fatalf("after discard: %+v", infos)
			}
		})
	}
}

// TestSavepointKeepsTxTrusted: a savepoint and a rollback to it rewrite
// tx.json, signed: the transaction still opens and commits.
func TestSavepointKeepsTxTrusted(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("b"), 0o644))
	must(t, tx.Savepoint(ctx, "one"))
	must(t, tx.Files().WriteFile("a.txt", []byte("c"), 0o644))
	must(t, tx.RollbackTo(ctx, "one"))
	tx.Release() // its process ended
	again, err := Open(ws, tx.ID(), Options{})
	must(t, err)
	if _, err := again.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "b" {
		t.Fatalf("a.txt = %q", b)
	}
}

// TestUndoneCommitSignsTxAgain: a transaction begun by the release
// before tx.json was signed, whose commit (journaled, so this jukebox's)
// fails and is undone, is open again with a signed tx.json: it opens.
func TestUndoneCommitSignsTxAgain(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	must(t, tx.Files().WriteFile("a.txt", []byte("b"), 0o644))
	must(t, writeJSONAtomic(filepath.Join(tx.StateDir(), txName), tx.meta)) // as the earlier release wrote it
	if _, err := Open(ws, tx.ID(), Options{}); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("open of an unsigned tx.json: %v", err)
	}
	failpoint = failAt("apply-0", errors.New("injected"))
	_, err = tx.Commit(ctx)
	failpoint = nil
	var ce *CommitError
	if !errors.As(err, &ce) || !ce.Open {
		t.Fatalf("commit: %v", err)
	}
	tx.Release() // another process opens it
	if again, err := Open(ws, tx.ID(), Options{}); err != nil {
		t.Fatalf("open after the undo: %v", err)
	} else {
		must(t, again.Rollback(ctx))
	}
}

// TestDeferredIsSigned: what Defer keeps comes back with the transaction
// when it opens again; a tx.json whose deferred work was changed (calls an
// agent or a cloned repository would have run at the commit) does not
// open.
func TestDeferredIsSigned(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	t.Cleanup(tx.begin.wait) // the names read in the background writes into ws until it ends
	must(t, tx.Defer([]byte(`[{"server":"files","tool":"write_file"}]`)))
	tx.Release() // its process ended
	again, err := Open(ws, tx.ID(), Options{})
	must(t, err)
	if got := string(again.Deferred()); got != `[{"server":"files","tool":"write_file"}]` {
		t.Fatalf("deferred after open: %s", got)
	}
	p := filepath.Join(tx.StateDir(), txName)
	data, err := os.ReadFile(p)
	must(t, err)
	spoiled := strings.Replace(string(data), "write_file", "rm_rf_home", 1)
	if spoiled == string(data) {
		t.Fatalf("tx.json does not hold the deferred work: %s", data)
	}
	must(t, os.WriteFile(p, []byte(spoiled), 0o600))
	if _, err := Open(ws, tx.ID(), Options{}); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("open with changed deferred work: %v", err)
	}
}
