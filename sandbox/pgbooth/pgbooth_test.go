//go:build linux

package pgbooth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jukebox-os/jukebox/internal/pgtest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
)

var bg = context.Background()

var tables atomic.Int64

// booth is a booth transaction over a scratch workspace with the endpoint
// attached, a table to write, and a direct connection to look with.
type booth struct {
	t      *testing.T
	tx     *sandbox.Tx
	srv    *pgbooth.Server
	direct *pgx.Conn
	table  string
	ws     string
}

func newBooth(t *testing.T) *booth {
	t.Helper()
	direct := pgtest.Connect(t)
	b := &booth{t: t, direct: direct, ws: t.TempDir(),
		table: fmt.Sprintf("pgbooth_%d_%d", os.Getpid(), tables.Add(1))}
	if _, err := direct.Exec(bg, "CREATE TABLE "+b.table+" (k text primary key)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { direct.Exec(bg, "DROP TABLE IF EXISTS "+b.table) })
	srv, err := pgbooth.Start(bg, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	tx, err := sandbox.Begin(b.ws, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Attach(tx); err != nil {
		t.Fatal(err)
	}
	b.tx, b.srv = tx, srv
	return b
}

// client connects to the endpoint as the agent would, from its env.
func (b *booth) client() *pgx.Conn {
	b.t.Helper()
	c, err := pgx.Connect(bg, b.srv.Env()["DATABASE_URL"])
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { c.Close(bg) })
	return c
}

func (b *booth) exec(c *pgx.Conn, sql string, args ...any) {
	b.t.Helper()
	if _, err := c.Exec(bg, sql, args...); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
}

// keys lists the rows a connection sees.
func (b *booth) keys(c *pgx.Conn) string {
	b.t.Helper()
	var s *string
	if err := c.QueryRow(bg, "SELECT string_agg(k, ',' ORDER BY k) FROM "+b.table).Scan(&s); err != nil {
		b.t.Fatal(err)
	}
	if s == nil {
		return ""
	}
	return *s
}

func (b *booth) want(c *pgx.Conn, want string) {
	b.t.Helper()
	if got := b.keys(c); got != want {
		b.t.Fatalf("rows %q, want %q", got, want)
	}
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// The agent's SQL is visible to the agent, invisible outside until the
// booth commits, and committed together with the files.
func TestCommitWithFiles(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('simple')")
	b.exec(c, "INSERT INTO "+b.table+" VALUES ($1)", "extended")
	b.want(c, "extended,simple")
	b.want(b.direct, "")
	if err := b.tx.Files().WriteFile("f.txt", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "extended,simple")
	if _, err := os.Stat(filepath.Join(b.ws, "f.txt")); err != nil {
		t.Fatal(err)
	}
	// The client was disconnected at the commit.
	if err := c.Ping(bg); err == nil {
		t.Error("the client is still connected after the commit")
	}
	assertNoPrepared(t, b.direct, b.tx)
}

// assertNoPrepared checks that tx left no prepared transaction: its own
// (jukebox-<tx>-…) only, since other packages' booth tests prepare theirs
// on the same server at the same time.
func assertNoPrepared(t *testing.T, c *pgx.Conn, tx *sandbox.Tx) {
	t.Helper()
	var n int
	if err := c.QueryRow(bg, "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE $1", "jukebox-"+tx.ID()+"-%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d prepared transactions of %s left", n, tx.ID())
	}
}

func TestRollbackWithFiles(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('a')")
	b.exec(c, "BEGIN")
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('b')")
	b.exec(c, "COMMIT")
	if err := b.tx.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "")
	assertNoPrepared(t, b.direct, b.tx)
}

// Transaction blocks, autocommit errors and savepoints behave as they do
// on the server itself.
func TestClientTransactions(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	ins := "INSERT INTO " + b.table + " VALUES "
	b.exec(c, ins+"('auto')")
	// An error in autocommit undoes only its statement.
	if _, err := c.Exec(bg, ins+"('auto')"); sqlState(err) != "23505" {
		t.Fatalf("duplicate: %v", err)
	}
	b.exec(c, ins+"('after-error')")
	// A rolled-back block is gone, a committed one stays.
	b.exec(c, "BEGIN")
	b.exec(c, ins+"('rolled')")
	if c.PgConn().TxStatus() != 'T' {
		t.Fatalf("status in a block %q", c.PgConn().TxStatus())
	}
	b.exec(c, "ROLLBACK")
	if c.PgConn().TxStatus() != 'I' {
		t.Fatalf("status after ROLLBACK %q", c.PgConn().TxStatus())
	}
	tx, err := c.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	tx.Exec(bg, ins+"('committed')")
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	// A failed block: status E, further statements refused, COMMIT rolls back.
	b.exec(c, "BEGIN")
	b.exec(c, ins+"('in-failed')")
	if _, err := c.Exec(bg, "SELECT 1/0"); sqlState(err) != "22012" {
		t.Fatalf("1/0: %v", err)
	}
	if c.PgConn().TxStatus() != 'E' {
		t.Fatalf("status after an error in a block %q", c.PgConn().TxStatus())
	}
	if _, err := c.Exec(bg, "SELECT 1"); sqlState(err) != "25P02" {
		t.Fatalf("statement in a failed block: %v", err)
	}
	tag, err := c.PgConn().Exec(bg, "COMMIT").ReadAll()
	if err != nil || tag[0].CommandTag.String() != "ROLLBACK" {
		t.Fatalf("COMMIT of a failed block: %v %v", tag, err)
	}
	// Isolation levels asked for are not applied (the held transaction's
	// stays), and not an error.
	b.exec(c, "BEGIN ISOLATION LEVEL SERIALIZABLE")
	b.exec(c, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
	b.exec(c, "ROLLBACK")
	// Savepoints of the client's own, inside its block.
	b.exec(c, "BEGIN")
	b.exec(c, ins+"('sp-kept')")
	b.exec(c, "SAVEPOINT a")
	b.exec(c, ins+"('sp-undone')")
	b.exec(c, "ROLLBACK TO SAVEPOINT a")
	b.exec(c, "RELEASE a")
	b.exec(c, "END")
	// pgx's transactions with savepoints (nested Begin).
	tx, _ = c.Begin(bg)
	inner, err := tx.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	inner.Exec(bg, ins+"('nested-undone')")
	inner.Rollback(bg)
	tx.Exec(bg, ins+"('nested-kept')")
	tx.Commit(bg)
	b.want(c, "after-error,auto,committed,nested-kept,sp-kept")
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "after-error,auto,committed,nested-kept,sp-kept")
}

// Several statements in one simple Query, transaction control among them.
func TestMultiStatementQuery(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	ins := "INSERT INTO " + b.table + " VALUES "
	q := ins + "('one'); BEGIN; " + ins + "('two'); ROLLBACK; " + ins + "('three'); BEGIN; " + ins + "('four'); COMMIT"
	res, err := c.PgConn().Exec(bg, q).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, r := range res {
		tags = append(tags, r.CommandTag.String())
	}
	if strings.Join(tags, ",") != "INSERT 0 1,BEGIN,INSERT 0 1,ROLLBACK,INSERT 0 1,BEGIN,INSERT 0 1,COMMIT" {
		t.Fatalf("tags %v", tags)
	}
	// Statements before BEGIN belong to the block, as on the server.
	_, err = c.PgConn().Exec(bg, ins+"('five'); BEGIN; "+ins+"('six')").ReadAll()
	if err != nil || c.PgConn().TxStatus() != 'T' {
		t.Fatalf("%v, status %q", err, c.PgConn().TxStatus())
	}
	b.exec(c, "ROLLBACK")
	// An error stops the query; what ran before it in autocommit is undone
	// with it (the query is one implicit transaction). The error's position
	// is in the whole query.
	q = ins + "('seven'); SELECT nosuchcolumn; " + ins + "('eight')"
	_, err = c.PgConn().Exec(bg, q).ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42703" {
		t.Fatalf("error: %v", err)
	}
	if want := int32(strings.Index(q, "nosuchcolumn") + 1); pe.Position != want {
		t.Errorf("error position %d, want %d", pe.Position, want)
	}
	// Semicolons inside strings, identifiers, comments and dollar quotes.
	b.exec(c, ins+"('a;b'); /* ; */ "+ins+"($x$c;d$x$) -- ;\n; "+ins+"(E'e\\';f')")
	// ('one' went with the ROLLBACK: BEGIN makes the statements before it
	// in the same query part of the block, on the server too.)
	b.want(c, "a;b,c;d,e';f,four,three")
}

func TestRefused(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	for _, sql := range []string{
		"PREPARE TRANSACTION 'x'",
		"COMMIT PREPARED 'x'",
		"ROLLBACK PREPARED 'x'",
		"LISTEN chan",
		"NOTIFY chan",
		"CREATE TEMP TABLE t (a int)",
		"create temporary table t (a int)",
		"SAVEPOINT jukebox_base",
		"/* hidden */ prepare   transaction 'y'",
	} {
		_, err := c.Exec(bg, sql)
		if sqlState(err) != "0A000" || !strings.Contains(err.Error(), "jukebox booth") {
			t.Errorf("%s: %v", sql, err)
		}
		if c.PgConn().TxStatus() != 'I' {
			t.Errorf("%s: status %q after the refusal", sql, c.PgConn().TxStatus())
		}
	}
	// A refusal inside a block fails the block, as an error there would.
	b.exec(c, "BEGIN")
	if _, err := c.Exec(bg, "PREPARE TRANSACTION 'z'"); sqlState(err) != "0A000" || c.PgConn().TxStatus() != 'E' {
		t.Fatalf("in a block: %v, status %q", err, c.PgConn().TxStatus())
	}
	b.exec(c, "ROLLBACK")
	// Ordinary prepared statements are not transactions.
	b.exec(c, "PREPARE p AS SELECT 1")
	b.exec(c, "EXECUTE p")
	// The session still commits.
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('ok')")
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "ok")
}

// Transaction control through the extended protocol, named statements
// included (as JDBC sends them).
func TestExtendedTransactionControl(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	pc := c.PgConn()
	run := func(sql string) string {
		t.Helper()
		r := pc.ExecParams(bg, sql, nil, nil, nil, nil).Read()
		if r.Err != nil {
			t.Fatalf("%s: %v", sql, r.Err)
		}
		return r.CommandTag.String()
	}
	if tag := run("BEGIN"); tag != "BEGIN" || pc.TxStatus() != 'T' {
		t.Fatalf("BEGIN: %q %q", tag, pc.TxStatus())
	}
	run("INSERT INTO " + b.table + " VALUES ('x')")
	if tag := run("ROLLBACK"); tag != "ROLLBACK" || pc.TxStatus() != 'I' {
		t.Fatalf("ROLLBACK: %q %q", tag, pc.TxStatus())
	}
	for _, name := range []string{"b", "c"} {
		if _, err := pc.Prepare(bg, name, map[string]string{"b": "BEGIN", "c": "COMMIT"}[name], nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 {
		if r := pc.ExecPrepared(bg, "b", nil, nil, nil).Read(); r.Err != nil || r.CommandTag.String() != "BEGIN" {
			t.Fatalf("named BEGIN: %v %v", r.CommandTag, r.Err)
		}
		run(fmt.Sprintf("INSERT INTO %s VALUES ('named%d')", b.table, i))
		if r := pc.ExecPrepared(bg, "c", nil, nil, nil).Read(); r.Err != nil || r.CommandTag.String() != "COMMIT" {
			t.Fatalf("named COMMIT: %v %v", r.CommandTag, r.Err)
		}
	}
	if r := pc.ExecParams(bg, "COMMIT PREPARED 'x'", nil, nil, nil, nil).Read(); sqlState(r.Err) != "0A000" {
		t.Fatalf("COMMIT PREPARED: %v", r.Err)
	}
	b.want(c, "named0,named1")
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "named0,named1")
}

// A client that disconnects keeps its committed work; its open block is
// rolled back. A later client takes over the session, reset.
func TestDisconnectAndReuse(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('kept')")
	b.exec(c, "SET search_path = nowhere, public")
	b.exec(c, "BEGIN")
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('open-block')")
	c.Close(bg)
	c2 := b.client()
	var sp string
	c2.QueryRow(bg, "SHOW search_path").Scan(&sp)
	if strings.Contains(sp, "nowhere") {
		t.Errorf("search_path leaked to the next client: %q", sp)
	}
	b.want(c2, "kept")
	c3 := b.client() // concurrent with c2: a second session
	b.exec(c3, "INSERT INTO "+b.table+" VALUES ('second')")
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "kept,second")
}

func TestCopy(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	n, err := c.CopyFrom(bg, pgx.Identifier{b.table}, []string{"k"}, pgx.CopyFromRows([][]any{{"c1"}, {"c2"}}))
	if err != nil || n != 2 {
		t.Fatalf("copy: %d %v", n, err)
	}
	var out strings.Builder
	if _, err := c.PgConn().CopyTo(bg, &out, "COPY "+b.table+" TO STDOUT"); err != nil {
		t.Fatal(err)
	}
	if out.String() != "c1\nc2\n" {
		t.Fatalf("copy out %q", out.String())
	}
	// A COPY in the middle of a simple Query.
	_, err = c.PgConn().CopyFrom(bg, strings.NewReader("c3\n"), "INSERT INTO "+b.table+" VALUES ('before'); COPY "+b.table+" FROM STDIN")
	if err != nil {
		t.Fatal(err)
	}
	b.want(c, "before,c1,c2,c3")
}

func TestAccess(t *testing.T) {
	b := newBooth(t)
	env := b.srv.Env()
	cfg, err := pgx.ParseConfig(env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Password = "wrong"
	if _, err := pgx.ConnectConfig(bg, cfg); sqlState(err) != "28P01" {
		t.Errorf("wrong password: %v", err)
	}
	cfg, _ = pgx.ParseConfig(env["DATABASE_URL"])
	cfg.Database = "other"
	if _, err := pgx.ConnectConfig(bg, cfg); sqlState(err) != "3D000" {
		t.Errorf("other database: %v", err)
	}
	if !strings.HasPrefix(b.srv.Addr(), "127.0.0.1:") || env["PGHOST"] != "127.0.0.1" || env["PGPASSWORD"] == "" {
		t.Errorf("env %v", env)
	}
}

func TestStartRefuses(t *testing.T) {
	_, err := pgbooth.Start(bg, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	var se *pgbooth.StartError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "cannot reach PostgreSQL") {
		t.Fatalf("unreachable: %v", err)
	}
}

// psql, a real client: -c, a script with blocks and errors, \copy.
func TestPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		testenv.Unavailable(t, "psql on PATH", "install postgresql-client (bash .ci/postgres.sh installs the server and its client)")
	}
	b := newBooth(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(psql, append([]string{"-X", "-v", "ON_ERROR_STOP=0", "-q"}, args...)...)
		cmd.Env = agentEnv(b.srv)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("psql %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("-c", "INSERT INTO "+b.table+" VALUES ('psql-c')")
	script := filepath.Join(t.TempDir(), "s.sql")
	os.WriteFile(script, []byte(`
BEGIN;
INSERT INTO `+b.table+` VALUES ('script-rolled');
ROLLBACK;
INSERT INTO `+b.table+` VALUES ('psql-c');
INSERT INTO `+b.table+` VALUES ('script');
\copy `+b.table+` from stdin
copied
\.
`), 0o644)
	out := run("-f", script)
	if !strings.Contains(out, "duplicate key") {
		t.Errorf("psql output %q", out)
	}
	got := run("-At", "-c", "SELECT string_agg(k, ',' ORDER BY k) FROM "+b.table)
	if strings.TrimSpace(got) != "copied,psql-c,script" {
		t.Fatalf("psql sees %q", got)
	}
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "copied,psql-c,script")
}

// agentEnv is this process's environment as the agent gets it: the
// endpoint's variables set, the empty ones removed.
func agentEnv(srv *pgbooth.Server) []string {
	set := srv.Env()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// A query still running when the booth decides is cancelled; the work
// the client saw complete commits.
func TestRunningQueryAtCommit(t *testing.T) {
	defer pgbooth.SetSettleTimeout(time.Second)()
	b := newBooth(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('x')")
	done := make(chan error, 1)
	go func() { _, err := c.Exec(bg, "SELECT pg_sleep(30)"); done <- err }()
	b.waitRunning("pg_sleep(30)")
	start := time.Now()
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the commit waited %v", d)
	}
	<-done
	b.want(b.direct, "x")
}

// A cancel can stop the statement after the one it was sent for (the
// postmaster signals the backend, then its process group; under load the
// second signal comes after the first ended the query): at the decision,
// the booth's rollback of the query it cancelled. It runs again, and the
// work before that query commits.
func TestLateCancelAtSettle(t *testing.T) {
	defer pgbooth.SetSettleTimeout(time.Second)()
	// The rollback's first run sleeps between its two statements (where a
	// late cancel leaves the transaction aborted again).
	defer pgbooth.SetSettleFirstRun(func(sql string) string {
		rollback, release, _ := strings.Cut(sql, "; ")
		return rollback + "; SELECT pg_sleep(30); " + release
	})()
	b := newBooth(t)
	mon := pgtest.Connect(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('x')")
	ran := make(chan struct{})
	go func() { c.Exec(bg, "SELECT pg_sleep(20)"); close(ran) }()
	t.Cleanup(func() { <-ran }) // before c closes
	b.waitRunning("pg_sleep(20)")
	cancelled, watched := make(chan error, 1), make(chan struct{})
	t.Cleanup(func() { <-watched }) // before mon closes
	go func() {
		defer close(watched)
		// The rollback's slow first run, cancelled as the late signal would.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var n int
			err := mon.QueryRow(bg, "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE state = 'active' "+
				"AND query LIKE 'ROLLBACK TO SAVEPOINT %; SELECT pg_sleep(30); %' AND pid <> pg_backend_pid()").Scan(&n)
			if err != nil || n > 0 {
				cancelled <- err
				return
			}
		}
		cancelled <- errors.New("the booth's rollback never ran")
	}()
	start := time.Now()
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the commit waited %v", d)
	}
	b.want(b.direct, "x")
}

// The agent's own cancels (its driver's statement timeout sends a
// CancelRequest to the endpoint) reach its session: the statement fails
// as on its own server, the session goes on, and the work around the
// cancelled statements commits. The booth cancels with a single signal,
// so none lands on the savepoint work the next statement starts with.
func TestAgentCancels(t *testing.T) {
	b := newBooth(t)
	cfg, err := pgx.ParseConfig(b.srv.Env()["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	// A driver that cancels the statement and keeps its connection (pgx's
	// default closes the connection instead; libpq, psycopg and asyncpg
	// cancel).
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 20 * time.Second}
	}
	c, err := pgx.ConnectConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(bg) })
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('x')")
	want := "x"
	for i := range 5 {
		pid := c.PgConn().PID()
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		start := time.Now()
		_, err := c.Exec(ctx, "SELECT pg_sleep(30)")
		cancel()
		if sqlState(err) != "57014" || time.Since(start) > 20*time.Second {
			t.Fatalf("cancel %d: %v after %v, want the server's 57014", i, err, time.Since(start))
		}
		if c.IsClosed() {
			t.Fatalf("cancel %d: the driver closed its connection (%v): the cancel did not reach the session in time", i, err)
		}
		if c.PgConn().PID() != pid {
			t.Fatalf("cancel %d: another session", i)
		}
		v := fmt.Sprintf("y%d", i)
		b.exec(c, "INSERT INTO "+b.table+" VALUES ($1)", v)
		want += "," + v
	}
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, want)
}

// Two connections, one waiting on a lock the other holds (it stays held
// until the booth decides): the wait is broken with a deadlock error that
// says why, and the rest still commits.
func TestLockWaitBetweenSessions(t *testing.T) {
	b := newBooth(t)
	a, c := b.client(), b.client()
	b.exec(a, "INSERT INTO "+b.table+" VALUES ('k')")
	start := time.Now()
	_, err := c.Exec(bg, "INSERT INTO "+b.table+" VALUES ('k')")
	if sqlState(err) != "40P01" || !strings.Contains(err.Error(), "another of the agent's connections") {
		t.Fatalf("waiting insert: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("broken after %v", d)
	}
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('other')")
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "k,other")
}

// A client that disconnects as its COPY FROM STDIN starts (simple and
// extended protocol) leaves a session the next client can use.
func TestDisconnectDuringCopy(t *testing.T) {
	b := newBooth(t)
	for _, extended := range []bool{false, true} {
		c := b.client()
		b.exec(c, "INSERT INTO "+b.table+" VALUES ($1)", fmt.Sprintf("kept-%v", extended))
		fe := c.PgConn().Frontend()
		sql := "COPY " + b.table + " FROM STDIN"
		if extended {
			fe.SendParse(&pgproto3.Parse{Query: sql})
			fe.SendBind(&pgproto3.Bind{})
			fe.SendExecute(&pgproto3.Execute{})
			fe.SendSync(&pgproto3.Sync{})
		} else {
			fe.SendQuery(&pgproto3.Query{String: sql})
		}
		fe.Flush()
		c.PgConn().Conn().Close()
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		next, err := pgx.Connect(ctx, b.srv.Env()["DATABASE_URL"])
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		b.exec(next, "SELECT 1")
		next.Close(bg)
	}
	if _, err := b.tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	b.want(b.direct, "kept-false,kept-true")
}

// Work lists what the sessions hold for the decision: statements kept
// (autocommit, a committed block), not those undone (a failed statement,
// a rolled-back block), reads left out; destructive ones marked; the
// tables written named.
func TestWork(t *testing.T) {
	b := newBooth(t)
	c := b.client()
	b.exec(c, "INSERT INTO "+b.table+" VALUES ('a')")
	if _, err := c.Exec(bg, "INSERT INTO "+b.table+" VALUES ('a')"); err == nil {
		t.Fatal("duplicate key accepted")
	}
	b.exec(c, "SELECT k FROM "+b.table)
	b.exec(c, "BEGIN")
	b.exec(c, "DELETE FROM "+b.table)
	b.exec(c, "ROLLBACK")
	b.exec(c, "BEGIN")
	b.exec(c, "UPDATE "+b.table+" SET k = 'b'")
	b.exec(c, "COMMIT")
	b.exec(c, "CREATE TABLE "+b.table+"_x (a int)")
	b.exec(c, "DROP TABLE "+b.table+"_x")
	c.Close(bg)
	work := b.srv.Work()
	if len(work) != 1 {
		t.Fatalf("%d sessions: %+v", len(work), work)
	}
	var got []string
	for _, s := range work[0].Statements {
		got = append(got, fmt.Sprintf("%s|%s|%s", s.SQL, s.Tag, strings.Join(s.Sensitive, ";")))
	}
	want := []string{
		"INSERT INTO " + b.table + " VALUES ('a')|INSERT 0 1|",
		"UPDATE " + b.table + " SET k = 'b'|UPDATE 1|updates every row (UPDATE without WHERE)",
		"CREATE TABLE " + b.table + "_x (a int)|CREATE TABLE|",
		"DROP TABLE " + b.table + "_x|DROP TABLE|drops a table",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("statements:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tabs := strings.Join(work[0].Tables, ","); tabs != b.table+","+b.table+"_x" {
		t.Errorf("tables %q", tabs)
	}
}

// A table dropped inside a function names no table in the statement
// that called it; the server's locks show it, and mark the session.
func TestWorkHiddenDrop(t *testing.T) {
	b := newBooth(t)
	victim, fn := b.table+"_v", b.table+"_wipe"
	if _, err := b.direct.Exec(bg, "CREATE TABLE "+victim+" (a int); CREATE FUNCTION "+fn+"() RETURNS int LANGUAGE plpgsql AS "+
		"$$BEGIN EXECUTE 'DROP TABLE "+victim+"'; RETURN 1; END$$"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.direct.Exec(bg, "DROP TABLE IF EXISTS "+victim+"; DROP FUNCTION IF EXISTS "+fn) })
	c := b.client()
	b.exec(c, "SELECT "+fn+"()")
	c.Close(bg)
	work := b.srv.Work()
	if err := b.tx.Rollback(bg); err != nil { // the session's locks go with it
		t.Fatal(err)
	}
	if len(work) != 1 || !slices.Contains(work[0].Tables, victim) || len(work[0].Sensitive) != 1 ||
		!strings.Contains(work[0].Sensitive[0], "exclusive lock on "+victim) {
		t.Fatalf("work %+v", work)
	}
	if s := pgbooth.Work(work).String(); !strings.Contains(s, "! SQL session") {
		t.Errorf("listing:\n%s", s)
	}
}

// waitRunning waits until a session runs a query that contains text (as
// the server's pg_stat_activity sees it), for at most 30 s.
func (b *booth) waitRunning(text string) {
	b.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		err := b.direct.QueryRow(bg, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()", text).Scan(&n)
		if err != nil {
			b.t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("no session ran %q within 30 s", text)
		}
	}
}
