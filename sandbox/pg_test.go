//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jukebox-os/jukebox/internal/pgtest"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
)

var bg = context.Background()

func pgSetup(t *testing.T) (*pgx.Conn, string, string) {
	conn := pgtest.Connect(t)
	table := fmt.Sprintf("booth_%d", os.Getpid())
	_, err := conn.Exec(bg, "CREATE TABLE IF NOT EXISTS "+table+" (k text primary key)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(bg, "DROP TABLE IF EXISTS "+table) })
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644)
	return conn, table, ws
}

// stageBoth writes a file and inserts a row in one booth transaction.
func stageBoth(t *testing.T, conn *pgx.Conn, table, ws, key string) (*sandbox.Tx, *pgtx.Participant) {
	t.Helper()
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pgtx.Begin(bg, conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(bg, "INSERT INTO "+table+" VALUES ($1)", key); err != nil {
		t.Fatal(err)
	}
	if err := tx.Join(p); err != nil {
		t.Fatal(err)
	}
	if err := tx.Files().WriteFile("a.txt", []byte("new-"+key), 0o644); err != nil {
		t.Fatal(err)
	}
	return tx, p
}

func rowExists(t *testing.T, conn *pgx.Conn, table, key string) bool {
	t.Helper()
	var n int
	if err := conn.QueryRow(bg, "SELECT count(*) FROM "+table+" WHERE k = $1", key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestPostgresCommitAndRollback(t *testing.T) {
	conn, table, ws := pgSetup(t)
	tx, _ := stageBoth(t, conn, table, ws, "committed")
	if _, err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "new-committed" || !rowExists(t, conn, table, "committed") {
		t.Fatalf("commit: file %q", b)
	}
	tx, p := stageBoth(t, conn, table, ws, "rolled")
	if err := tx.Savepoint(bg, "s"); err != nil {
		t.Fatal(err)
	}
	p.Exec(bg, "INSERT INTO "+table+" VALUES ('after-savepoint')")
	if err := tx.RollbackTo(bg, "s"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	if rowExists(t, conn, table, "rolled") || rowExists(t, conn, table, "after-savepoint") {
		t.Fatal("rollback kept the row")
	}
}

// TestPostgresCrashAtEveryStep: files and PostgreSQL recover together.
func TestPostgresCrashAtEveryStep(t *testing.T) {
	conn, table, ws := pgSetup(t)
	dsn := pgtest.DSN(t)
	var steps []string
	sandbox.SetFailpoint(func(s string) error { steps = append(steps, s); return nil })
	tx, _ := stageBoth(t, conn, table, ws, "probe")
	_, err := tx.Commit(bg)
	sandbox.SetFailpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[bool]int{}
	var ids []string
	for i, step := range steps {
		key := fmt.Sprintf("k%d", i)
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644)
		tx, _ := stageBoth(t, conn, table, ws, key)
		ids = append(ids, tx.ID())
		sandbox.SetFailpoint(func(s string) error {
			if s == step {
				return sandbox.ErrCrash
			}
			return nil
		})
		_, err := tx.Commit(bg)
		sandbox.SetFailpoint(nil)
		if !errors.Is(err, sandbox.ErrCrash) {
			t.Fatalf("%s: %v", step, err)
		}
		// A crash leaves the session's transaction behind; a new session
		// (after the restart) sees only what was prepared or committed.
		conn.Exec(bg, "ROLLBACK")
		if _, err := sandbox.Recover(bg, ws, sandbox.Options{}, pgtx.Resolver{DSN: dsn}); err != nil {
			t.Fatalf("%s: recover: %v", step, err)
		}
		if infos, _ := sandbox.List(ws, sandbox.Options{}); len(infos) == 1 && !infos[0].Committing {
			o, _ := sandbox.Open(ws, infos[0].ID, sandbox.Options{})
			o.Rollback(bg)
		}
		b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
		fileNew, rowNew := string(b) == "new-"+key, rowExists(t, conn, table, key)
		if fileNew != rowNew {
			t.Errorf("%s: file new=%v, row new=%v", step, fileNew, rowNew)
		}
		seen[fileNew]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("outcomes %v: want both", seen)
	}
	if left := preparedLeft(t, conn, ids...); left != 0 {
		t.Errorf("%d prepared transactions left", left)
	}
}

// preparedLeft counts the prepared transactions of the booth transactions
// ids on the server: only this test's, since other tests (other packages,
// at the same time) prepare theirs on the same server.
func preparedLeft(t *testing.T, conn *pgx.Conn, ids ...string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		var left int
		if err := conn.QueryRow(bg, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE $1", "jukebox-"+id+"-%").Scan(&left); err != nil {
			t.Fatal(err)
		}
		n += left
	}
	return n
}

// TestPostgresFailedTransactionFailsCommit: a transaction that hit an
// error cannot be prepared (PostgreSQL answers PREPARE TRANSACTION with
// ROLLBACK and no error); the commit must fail before its decision, and
// the files stay as they were.
func TestPostgresFailedTransactionFailsCommit(t *testing.T) {
	conn, table, ws := pgSetup(t)
	tx, p := stageBoth(t, conn, table, ws, "failed")
	if _, err := p.Exec(bg, "SELECT 1/0"); err == nil {
		t.Fatal("division by zero did not fail")
	}
	if _, err := tx.Commit(bg); err == nil {
		t.Fatal("the commit went on with a transaction that was not prepared")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "old" {
		t.Fatalf("a.txt = %q after a failed commit", b)
	}
	if rowExists(t, conn, table, "failed") {
		t.Fatal("the row of a failed transaction exists")
	}
	tx.Rollback(bg)
}
