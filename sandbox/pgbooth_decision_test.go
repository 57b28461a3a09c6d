//go:build linux

package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/internal/pgtest"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
)

// TestProxyDecisionWriteFailureKeepsSQL: with --pg, a decision record
// that cannot be written (ENOSPC) keeps the transaction open with its SQL
// prepared on the server (it rolled both back). After the run's process
// ends, recovery leaves it alone, and a later commit with the server's
// resolver applies files and rows together; a rollback drops both.
func TestProxyDecisionWriteFailureKeepsSQL(t *testing.T) {
	conn, table, ws := pgSetup(t)
	dsn := pgtest.DSN(t)
	for _, commit := range []bool{true, false} {
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644)
		key := map[bool]string{true: "held-c", false: "held-r"}[commit]
		tx, srv := proxyRun(t, dsn, table, ws, key)
		sandbox.SetFailpoint(func(s string) error {
			if s == "write-journal-commit" {
				return syscall.ENOSPC
			}
			return nil
		})
		_, err := tx.Commit(bg)
		sandbox.SetFailpoint(nil)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "stays open") || tx.Closed() {
			t.Fatalf("commit: %v (closed %v)", err, tx.Closed())
		}
		srv.Close() // the run ends: prepared sessions stay
		tx.Release()
		if left := preparedLeft(t, conn, tx.ID()); left != 2 {
			t.Fatalf("%d prepared sessions after the failure, want 2", left)
		}
		resolver := pgbooth.Resolver{DSN: dsn}
		if _, err := sandbox.Recover(bg, ws, sandbox.Options{}, resolver); err != nil {
			t.Fatal(err)
		}
		if o, err := sandbox.Open(ws, tx.ID(), sandbox.Options{}); err == nil {
			if _, err := o.Commit(bg); err == nil {
				t.Fatal("committed with no resolver for the prepared SQL")
			}
			if err := o.Rollback(bg); err == nil {
				t.Fatal("rolled back with no resolver for the prepared SQL")
			}
			o.Release()
		}
		o, err := sandbox.Open(ws, tx.ID(), sandbox.Options{Resolvers: []sandbox.Resolver{resolver}})
		if err != nil {
			t.Fatalf("open after the failure: %v", err)
		}
		if lost := o.Lost(); len(lost) != 0 {
			t.Fatalf("the prepared SQL counted as lost: %v", lost)
		}
		if commit {
			_, err = o.Commit(bg)
		} else {
			err = o.Rollback(bg)
		}
		if err != nil {
			t.Fatalf("commit=%v: %v", commit, err)
		}
		b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
		a, bb := rowExists(t, conn, table, key+"-a"), rowExists(t, conn, table, key+"-b")
		if (string(b) == "new-"+key) != commit || a != commit || bb != commit {
			t.Errorf("commit=%v: a.txt %q, rows %v %v", commit, b, a, bb)
		}
		if left := preparedLeft(t, conn, tx.ID()); left != 0 {
			t.Errorf("commit=%v: %d prepared left", commit, left)
		}
	}
}
