//go:build linux

package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jukebox-os/jukebox/internal/pgtest"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
)

// proxyRun stages a file write and, through the --pg endpoint, two client
// sessions' inserts (two sessions, so two prepared transactions under the
// participant). The endpoint is returned open; close it to play a crash.
func proxyRun(t *testing.T, dsn, table, ws, key string) (*sandbox.Tx, *pgbooth.Server) {
	t.Helper()
	tx, err := sandbox.Begin(ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := pgbooth.Start(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Attach(tx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{key + "-a", key + "-b"} {
		c, err := pgx.Connect(bg, srv.Env()["DATABASE_URL"])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(bg, "INSERT INTO "+table+" VALUES ($1)", k); err != nil {
			t.Fatal(err)
		}
		defer c.Close(bg) // both stay connected until here: two sessions
	}
	if err := tx.Files().WriteFile("a.txt", []byte("new-"+key), 0o644); err != nil {
		t.Fatal(err)
	}
	return tx, srv
}

// TestProxyCrashAtEveryStep: a commit with the endpoint's sessions,
// crashed at every step and recovered (the endpoint gone, as with a killed
// jukebox), leaves files and rows both old or both new, and no prepared
// transaction behind.
func TestProxyCrashAtEveryStep(t *testing.T) {
	conn, table, ws := pgSetup(t)
	dsn := pgtest.DSN(t)
	var steps []string
	sandbox.SetFailpoint(func(s string) error { steps = append(steps, s); return nil })
	tx, srv := proxyRun(t, dsn, table, ws, "probe")
	_, err := tx.Commit(bg)
	sandbox.SetFailpoint(nil)
	srv.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !rowExists(t, conn, table, "probe-a") || !rowExists(t, conn, table, "probe-b") {
		t.Fatal("the probe's rows were not committed")
	}
	resolver := pgbooth.Resolver{DSN: dsn}
	seen := map[bool]int{}
	check := func(step, key, id string) {
		t.Helper()
		if _, err := sandbox.Recover(bg, ws, sandbox.Options{}, resolver); err != nil {
			t.Fatalf("%s: recover: %v", step, err)
		}
		if infos, _ := sandbox.List(ws, sandbox.Options{}); len(infos) == 1 && !infos[0].Committing {
			o, _ := sandbox.Open(ws, infos[0].ID, sandbox.Options{})
			o.Rollback(bg)
		}
		b, _ := os.ReadFile(filepath.Join(ws, "a.txt"))
		fileNew := string(b) == "new-"+key
		a, bb := rowExists(t, conn, table, key+"-a"), rowExists(t, conn, table, key+"-b")
		if fileNew != a || fileNew != bb {
			t.Errorf("%s: file new=%v, rows new=%v,%v", step, fileNew, a, bb)
		}
		seen[fileNew]++
		if left := preparedLeft(t, conn, id); left != 0 {
			t.Errorf("%s: %d prepared transactions left", step, left)
		}
	}
	for i, step := range steps {
		key := fmt.Sprintf("k%d", i)
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644)
		tx, srv := proxyRun(t, dsn, table, ws, key)
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
		srv.Close() // the process dies: unprepared sessions end, prepared ones stay
		check(step, key, tx.ID())
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("outcomes %v: want both", seen)
	}

	// A crash in the middle of the participant's COMMIT PREPARED: one
	// session committed, the other still prepared. Recovery commits it.
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("old"), 0o644)
	tx, srv = proxyRun(t, dsn, table, ws, "half")
	sandbox.SetFailpoint(func(s string) error {
		if s == "applied" {
			return sandbox.ErrCrash
		}
		return nil
	})
	_, err = tx.Commit(bg)
	sandbox.SetFailpoint(nil)
	if !errors.Is(err, sandbox.ErrCrash) {
		t.Fatalf("applied: %v", err)
	}
	srv.Close()
	var gid string
	if err := conn.QueryRow(bg, "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE $1 ORDER BY gid LIMIT 1", "jukebox-"+tx.ID()+"-%").Scan(&gid); err != nil {
		t.Fatalf("no prepared session after the decision: %v", err)
	}
	if _, err := conn.Exec(bg, "COMMIT PREPARED '"+gid+"'"); err != nil {
		t.Fatal(err)
	}
	check("half-committed", "half", tx.ID())
}

// TestProxyCrashBeforeDecision: jukebox dies while the agent runs or at
// the question, before any commit began. The endpoint's sessions end with
// it (PostgreSQL rolls them back), so the transaction left open must not
// commit its files alone: the commit is refused, naming the lost SQL, and
// a rollback leaves files and rows both old, nothing prepared.
func TestProxyCrashBeforeDecision(t *testing.T) {
	conn, table, ws := pgSetup(t)
	tx, srv := proxyRun(t, pgtest.DSN(t), table, ws, "lost")
	srv.Close() // the process dies: unprepared sessions end
	tx.Release()
	o, err := sandbox.Open(ws, tx.ID(), sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Commit(bg); err == nil || !strings.Contains(err.Error(), pgbooth.Kind) {
		t.Fatalf("commit of the files alone: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "old" {
		t.Fatalf("a.txt is %q: the files committed without the SQL", b)
	}
	if rowExists(t, conn, table, "lost-a") || rowExists(t, conn, table, "lost-b") {
		t.Fatal("rows committed")
	}
	if err := o.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	if left := preparedLeft(t, conn, tx.ID()); left != 0 {
		t.Errorf("%d prepared transactions left", left)
	}
}
