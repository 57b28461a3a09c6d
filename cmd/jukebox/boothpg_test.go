//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jukebox-os/jukebox/internal/pgtest"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// pgRun is what a --pg test needs: the server's DSN, a direct connection
// to look with, a fresh table and a workspace to run in.
type pgRun struct {
	dsn   string
	conn  *pgx.Conn
	table string
	ws    string
	tape  string
}

func newPGRun(t *testing.T) *pgRun {
	t.Helper()
	requireBooth(t)
	if _, err := exec.LookPath("psql"); err != nil {
		testenv.Unavailable(t, "psql on PATH (a real PostgreSQL client for the agent)", "install postgresql-client, or run bash .ci/postgres.sh")
	}
	r := &pgRun{dsn: pgtest.DSN(t), conn: pgtest.Connect(t), ws: t.TempDir(),
		tape: filepath.Join(t.TempDir(), "pg.jbx"), table: fmt.Sprintf("cli_pg_%d", os.Getpid())}
	if _, err := r.conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+r.table+"; CREATE TABLE "+r.table+" (k text)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+r.table) })
	t.Chdir(r.ws)
	return r
}

func (r *pgRun) rows(t *testing.T) string {
	t.Helper()
	var s *string
	if err := r.conn.QueryRow(context.Background(), "SELECT string_agg(k, ',' ORDER BY k) FROM "+r.table).Scan(&s); err != nil {
		t.Fatal(err)
	}
	if s == nil {
		return ""
	}
	return *s
}

// psqlAgent is an agent script that writes a file and runs each statement
// with its own psql, as agents do.
func psqlAgent(statements ...string) string {
	s := "echo agent > agent.txt"
	for _, q := range statements {
		s += fmt.Sprintf(` && psql -X -q -v ON_ERROR_STOP=1 "$DATABASE_URL" -c %q`, q)
	}
	return s
}

// record --booth --pg: with --commit never the table is untouched, with
// --commit always the rows land together with the files; several psql
// runs in a row each see what the one before did.
func TestRecordBoothPG(t *testing.T) {
	for _, c := range []struct {
		commit string
		want   string
	}{{"never", ""}, {"always", "one,two"}} {
		t.Run(c.commit, func(t *testing.T) {
			r := newPGRun(t)
			agent := psqlAgent("INSERT INTO "+r.table+" VALUES ('one')",
				"CREATE TABLE "+r.table+"_b AS SELECT k FROM "+r.table,
				"INSERT INTO "+r.table+" SELECT 'two' FROM "+r.table+"_b",
				"DROP TABLE "+r.table+"_b")
			_, errs := wantCode(t, ExitOK, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn, "--commit", c.commit, "--", "sh", "-c", agent)
			if got := r.rows(t); got != c.want {
				t.Fatalf("rows %q, want %q\n%s", got, c.want, errs)
			}
			_, err := os.Stat(filepath.Join(r.ws, "agent.txt"))
			if (err == nil) != (c.want != "") {
				t.Fatalf("agent.txt: %v, rows %q", err, c.want)
			}
			if !strings.Contains(errs, "joins the booth through 127.0.0.1:") {
				t.Errorf("stderr:\n%s", errs)
			}
		})
	}
}

// A session PostgreSQL cannot prepare (this one used a temporary table)
// fails the whole commit: neither the rows nor the files land.
func TestRecordBoothPGCommitFails(t *testing.T) {
	r := newPGRun(t)
	agent := psqlAgent("INSERT INTO "+r.table+" VALUES ('one')", "SELECT 1 AS a INTO TEMP t0")
	code, _, errs := jb(t, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn, "--commit", "always", "--", "sh", "-c", agent)
	if code == ExitOK || !strings.Contains(errs, "temporary") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if got := r.rows(t); got != "" {
		t.Fatalf("rows %q after a failed commit", got)
	}
	if _, err := os.Stat(filepath.Join(r.ws, "agent.txt")); err == nil {
		t.Fatal("agent.txt landed although the commit failed")
	}
}

// A server that cannot be reached, or cannot prepare transactions, is
// refused before the agent starts: exit 2, no tape, nothing run.
func TestRecordBoothPGRefused(t *testing.T) {
	r := newPGRun(t)
	noPrepared := scratchCluster(t, "-c max_prepared_transactions=0")
	for _, c := range []struct {
		dsn, want string
	}{
		{"postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=3", "cannot reach PostgreSQL at 127.0.0.1:1/none"},
		{noPrepared, "max_prepared_transactions = 0"},
	} {
		_, errs := wantCode(t, ExitUsage, "record", "-o", r.tape, "--booth", "--pg", c.dsn, "--commit", "always",
			"--", "sh", "-c", "echo ran > ran.txt")
		if !strings.Contains(errs, c.want) {
			t.Errorf("stderr lacks %q:\n%s", c.want, errs)
		}
		if _, err := os.Stat(filepath.Join(r.ws, "ran.txt")); err == nil {
			t.Fatal("the agent ran")
		}
		if _, err := os.Stat(r.tape); err == nil {
			t.Fatal("a tape was written")
		}
	}
	for _, args := range [][]string{
		{"--pg", r.dsn},
		{"--booth", "--pg", r.dsn, "--keep", "--commit", "never"},
	} {
		_, errs := wantCode(t, ExitUsage, append(append([]string{"record", "-o", r.tape}, args...), "--", "true")...)
		if !strings.Contains(errs, "--pg") {
			t.Errorf("%v: %s", args, errs)
		}
	}
}

// scratchCluster starts a PostgreSQL server of the test's own with extra
// server options, and returns its DSN. It is stopped when the test ends.
func scratchCluster(t *testing.T, opts string) string {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		testenv.Unavailable(t, "PostgreSQL's server programs (initdb, pg_ctl)", "run bash .ci/postgres.sh, which installs them")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "jukebox-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	as := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	if os.Getuid() == 0 { // the server refuses to run as root
		pg, err := user.Lookup("postgres")
		if err != nil {
			testenv.Unavailable(t, "a postgres user to run a scratch server as", "run bash .ci/postgres.sh")
		}
		uid, _ := strconv.Atoi(pg.Uid)
		os.Chown(dir, uid, -1)
		as = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	t.Cleanup(func() {
		as(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop").Run()
		os.RemoveAll(dir)
	})
	if out, err := as(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	// The port was free a moment ago: another process may take it before
	// the server binds it, which is tried again on another.
	for try := 1; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		logPath := filepath.Join(dir, fmt.Sprintf("log-%d", try))
		o := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%d -c unix_socket_directories=%s -c fsync=off %s", port, dir, opts)
		out, err := as(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", logPath, "-o", o, "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
		}
		log, _ := os.ReadFile(logPath)
		if try < 3 && bytes.Contains(log, []byte("could not bind")) {
			t.Logf("pg_ctl start: port %d taken meanwhile, trying another\n%s", port, log)
			continue
		}
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// replay --booth --pg: the replayed agent's SQL joins the booth as the
// recorded one's did.
func TestReplayBoothPG(t *testing.T) {
	r := newPGRun(t)
	agent := psqlAgent("INSERT INTO " + r.table + " VALUES ('one')")
	wantCode(t, ExitOK, "record", "-o", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn, "--commit", "never", "--", "sh", "-c", agent)
	if got := r.rows(t); got != "" {
		t.Fatalf("rows %q after record --commit never", got)
	}
	_, errs := wantCode(t, ExitOK, "replay", r.tape, "--booth", "--booth-mode", "copy", "--pg", r.dsn, "--commit", "always")
	if got := r.rows(t); got != "one" {
		t.Fatalf("rows %q after replay --commit always\n%s", got, errs)
	}
}
