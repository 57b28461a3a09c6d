// Package pgtx is the booth's PostgreSQL participant: it holds one
// transaction open on a connection and, at commit, PREPAREs it so that the
// booth's single decision record covers files and database together.
// After a crash, Resolver finishes the prepared transaction the way the
// journal says (COMMIT PREPARED or ROLLBACK PREPARED).
//
// The server must allow prepared transactions (max_prepared_transactions
// greater than zero).
package pgtx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Kind is the participant kind recorded in the booth journal.
const Kind = "postgres"

// ErrNotInTx reports use of a participant whose transaction has ended.
var ErrNotInTx = errors.New("pgtx: transaction already prepared or ended")

// ErrFailed is a transaction a statement had failed in (PostgreSQL's
// SQLSTATE 25P02, in_failed_sql_transaction): PREPARE TRANSACTION rolled
// it back instead of preparing it.
var ErrFailed = errors.New("the transaction had failed and was rolled back")

// Participant holds a PostgreSQL transaction for a booth Tx.
type Participant struct {
	conn  *pgx.Conn
	open  bool
	owned bool // Connect made conn: Close closes it
}

// Begin starts a transaction on conn. Run statements through Exec, Query
// or QueryRow until the booth commits or rolls back.
func Begin(ctx context.Context, conn *pgx.Conn) (*Participant, error) {
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return nil, fmt.Errorf("pgtx: begin: %w", err)
	}
	return &Participant{conn: conn, open: true}, nil
}

// Connect connects to dsn and begins a transaction there, on a
// connection the participant owns: Close closes it.
func Connect(ctx context.Context, dsn string) (*Participant, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("pgtx: connect: %w", err)
	}
	p, err := Begin(ctx, conn)
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	p.owned = true
	return p, nil
}

// Close closes the connection Connect made (a participant made by Begin
// leaves its caller's connection alone). Close the participant once its
// transaction has ended.
func (p *Participant) Close(ctx context.Context) error {
	if !p.owned {
		return nil
	}
	return p.conn.Close(ctx)
}

// Exec runs a statement inside the held transaction.
func (p *Participant) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if !p.open {
		return pgconn.CommandTag{}, ErrNotInTx
	}
	return p.conn.Exec(ctx, sql, args...)
}

// Query runs a statement that may return rows inside the held
// transaction.
func (p *Participant) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !p.open {
		return nil, ErrNotInTx
	}
	return p.conn.Query(ctx, sql, args...)
}

// QueryRow runs a query inside the held transaction.
func (p *Participant) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return p.conn.QueryRow(ctx, sql, args...)
}

// Kind returns "postgres".
// StandardStrings says whether the session's strings are standard
// (standard_conforming_strings on, every server's default since 9.1):
// off, a backslash in a quoted string escapes.
func (p *Participant) StandardStrings() bool {
	return p.conn.PgConn().ParameterStatus("standard_conforming_strings") != "off"
}

func (p *Participant) Kind() string { return Kind }

// Prepare runs PREPARE TRANSACTION gid.
func (p *Participant) Prepare(ctx context.Context, gid string) error {
	if !p.open {
		return ErrNotInTx
	}
	tag, err := p.conn.Exec(ctx, "PREPARE TRANSACTION "+quote(gid))
	p.open = false
	if err == nil && tag.String() != "PREPARE TRANSACTION" {
		// A transaction that had failed is rolled back instead, with no
		// error: nothing was prepared, so the commit must not go on.
		return fmt.Errorf("pgtx: PREPARE TRANSACTION %s: the server answered %q: %w", gid, tag.String(), ErrFailed)
	}
	return err
}

// CommitPrepared runs COMMIT PREPARED gid.
func (p *Participant) CommitPrepared(ctx context.Context, gid string) error {
	_, err := p.conn.Exec(ctx, "COMMIT PREPARED "+quote(gid))
	return err
}

// RollbackPrepared runs ROLLBACK PREPARED gid.
func (p *Participant) RollbackPrepared(ctx context.Context, gid string) error {
	_, err := p.conn.Exec(ctx, "ROLLBACK PREPARED "+quote(gid))
	return err
}

// Rollback aborts the transaction if it was never prepared.
func (p *Participant) Rollback(ctx context.Context) error {
	if !p.open {
		return nil
	}
	p.open = false
	_, err := p.conn.Exec(ctx, "ROLLBACK")
	return err
}

// Savepoint runs SAVEPOINT name.
func (p *Participant) Savepoint(ctx context.Context, name string) error {
	_, err := p.Exec(ctx, "SAVEPOINT "+pgx.Identifier{name}.Sanitize())
	return err
}

// RollbackTo runs ROLLBACK TO SAVEPOINT name.
func (p *Participant) RollbackTo(ctx context.Context, name string) error {
	_, err := p.Exec(ctx, "ROLLBACK TO SAVEPOINT "+pgx.Identifier{name}.Sanitize())
	return err
}

// Resolver finishes prepared transactions after a crash; pass it to
// sandbox.Recover. It connects to DSN only when a journal names a
// PostgreSQL participant.
type Resolver struct {
	DSN string
}

// Kind returns "postgres".
func (r Resolver) Kind() string { return Kind }

// Resolve commits or rolls back gid, and succeeds when gid is no longer
// prepared (finished before the crash).
func (r Resolver) Resolve(ctx context.Context, gid string, commit bool) error {
	conn, err := pgx.Connect(ctx, r.DSN)
	if err != nil {
		return fmt.Errorf("pgtx: resolve %s: %w", gid, err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = $1", gid).Scan(&n); err != nil {
		return fmt.Errorf("pgtx: resolve %s: %w", gid, err)
	}
	if n == 0 {
		return nil
	}
	verb := "ROLLBACK PREPARED "
	if commit {
		verb = "COMMIT PREPARED "
	}
	if _, err := conn.Exec(ctx, verb+quote(gid)); err != nil {
		return fmt.Errorf("pgtx: resolve %s: %w", gid, err)
	}
	return nil
}

// quote makes a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
