package engine

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/sandbox/pgbooth"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// SQL runs a statement in the transaction's PostgreSQL session for the
// DSN, begun and joined to the booth transaction on first use.
func (o txOps) SQL(ctx context.Context, req controlapi.SQL) (controlapi.Rows, error) {
	if !strings.HasPrefix(req.DSN, "postgres://") && !strings.HasPrefix(req.DSN, "postgresql://") {
		return controlapi.Rows{}, controlapi.BadRequest(
			"sql: a PostgreSQL URL (postgres://...) is staged here; a SQLite file is staged with the workspace (stage-path)")
	}
	if o.t.ownEndpoint(req.DSN) {
		// Its sessions are the agent's own, held by the booth until the
		// run's decision; one the SDK opened ended with the SDK's
		// transaction, and the booth's commit then failed.
		return controlapi.Rows{}, controlapi.BadRequest(
			"sql: %s is the booth's own PostgreSQL endpoint (DATABASE_URL under record --pg): give the server's own URL, "+
				"the one --pg names; the SDK's statements join the booth's decision through it", redact.Text(req.DSN))
	}
	if o.t.keeps {
		// As record refuses --pg with --keep: the session would end with
		// the run, its work dropped with no word (the SDK's commit said
		// committed, the booth kept the files alone).
		return controlapi.Rows{}, controlapi.Fail(http.StatusConflict, controlapi.TypeSQL, fmt.Errorf(
			"sql: this booth run keeps its transaction open for a later decision (--keep, or --commit ask with no "+
				"terminal to ask on), and a PostgreSQL session cannot outlive the run: its statements could not be "+
				"committed with the files. Record with --commit always, on-success or never"))
	}
	args, err := sqlParams(req.Params)
	if err != nil {
		return controlapi.Rows{}, err
	}
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	ctx = context.WithoutCancel(ctx)
	part, err := o.st.participant(ctx, req.DSN)
	if err != nil {
		return controlapi.Rows{}, controlapi.Fail(http.StatusBadGateway, controlapi.TypeSQL, err)
	}
	rows, tag, err := query(ctx, part, req.SQL, args)
	if err == nil {
		o.st.statements++
		o.st.keep(req.DSN, req.SQL, tag, part.StandardStrings())
	}
	return rows, err
}

// ownEndpoint reports whether dsn names an endpoint this run serves to
// the booth's agent (the --pg endpoint's DATABASE_URL).
func (t *sdkTxs) ownEndpoint(dsn string) bool {
	b := t.session.o.Booth
	u, err := url.Parse(dsn)
	if b == nil || err != nil {
		return false
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
		return false
	}
	for _, ep := range b.Endpoints {
		if _, p, err := net.SplitHostPort(ep); err == nil && p == port {
			return true
		}
	}
	return false
}

// keep notes a statement run in the session for dsn, for the commit's or
// the rollback's frame, as a booth run's sessions are noted (pgbooth).
func (st *sdkTx) keep(dsn, sql, tag string, scs bool) {
	i := slices.Index(st.dsns, dsn)
	if i < 0 {
		i = len(st.dsns)
		st.dsns, st.sql, st.scs = append(st.dsns, dsn), append(st.sql, tapefmt.SQLSession{Session: i + 1}), append(st.scs, scs)
	}
	st.sql[i].Statements = pgbooth.Keep(st.sql[i].Statements, sql, tag, scs)
}

// sqlWork is the statements the transaction's sessions hold for its
// decision, one entry per session that kept one, with the tables they
// name (read once, at the decision).
func (st *sdkTx) sqlWork() []tapefmt.SQLSession {
	var out []tapefmt.SQLSession
	for i, s := range st.sql {
		if len(s.Statements) > 0 {
			s.Tables = pgbooth.Tables(s.Statements, st.scs[i])
			out = append(out, s)
		}
	}
	return out
}

// sqlParams are a statement's parameters: JSON values, numbers as int64
// when they are whole, as a numeric when they are whole past int64 (a
// Python int: float64 rounded 2**70 to 1180591620717411300000 without a
// word), else float64.
func sqlParams(params []json.RawMessage) ([]any, error) {
	args := make([]any, len(params))
	for i, raw := range params {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, controlapi.BadRequest("params[%d]: %v", i, err)
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if b, ok := new(big.Int).SetString(n.String(), 10); ok {
				v = pgtype.Numeric{Int: b, Valid: true}
			} else {
				v, _ = n.Float64()
			}
		}
		args[i] = v
	}
	return args, nil
}

// query runs sql in part: its columns, rows and rows affected.
func query(ctx context.Context, part *pgtx.Participant, sql string, args []any) (controlapi.Rows, string, error) {
	rows, err := part.Query(ctx, sql, args...)
	if err != nil && strings.Contains(err.Error(), "cannot find encode plan") {
		// A value of another type than the server took the parameter for
		// (5 or True where it inferred text: "select $1"), which pgx
		// will not convert: sent again as text of unknown type, for the
		// server to read as it reads a literal, as psycopg sends values.
		// Nothing was run: pgx refused before executing.
		rows, err = part.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	}
	if err != nil {
		return controlapi.Rows{}, "", sqlError(err)
	}
	out := controlapi.Rows{Columns: []string{}, Rows: [][]any{}}
	for _, f := range rows.FieldDescriptions() {
		out.Columns = append(out.Columns, f.Name)
		name := strconv.FormatUint(uint64(f.DataTypeOID), 10) // a type pgx does not know: its OID
		if typ, ok := rows.Conn().TypeMap().TypeForOID(f.DataTypeOID); ok {
			name = typ.Name
		}
		out.Types = append(out.Types, name)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return controlapi.Rows{}, "", sqlError(err)
		}
		for i, v := range vals {
			vals[i] = jsonValue(v, out.Types[i])
		}
		out.Rows = append(out.Rows, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return controlapi.Rows{}, "", sqlError(err)
	}
	out.RowCount = rows.CommandTag().RowsAffected()
	return out, rows.CommandTag().String(), nil
}

// jsonValue is v, a value pgx decoded from a column of the PostgreSQL
// type typ, as the answer gives it: as it is when JSON has its form (a
// number, text, a bool, JSON, an array of them; a bytea as base64), else
// as text a client can read exactly: a numeric's digits, a float's NaN
// or Infinity, dates and times in ISO 8601 (with the offset for a
// timestamptz; 6 fraction digits, which every Python reads), a uuid in
// its usual form, and any other type in PostgreSQL's own text.
func jsonValue(v any, typ string) any {
	switch x := v.(type) {
	case time.Time:
		switch typ {
		case "date":
			return x.Format(time.DateOnly)
		case "timestamp":
			return x.Format("2006-01-02T15:04:05.000000")
		}
		return x.Format("2006-01-02T15:04:05.000000-07:00")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return pgFloatText(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return pgFloatText(float64(x))
		}
	case [16]byte:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case pgtype.InfinityModifier:
		return x.String()
	case []any:
		for i := range x {
			x[i] = jsonValue(x[i], strings.TrimPrefix(typ, "_"))
		}
	case driver.Valuer: // numeric, time, interval, bits, geometry...: their text
		if t, err := x.Value(); err == nil {
			return t
		}
	}
	return v
}

// pgFloatText is a float JSON has no number for, as PostgreSQL writes it.
func pgFloatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

// sqlError is PostgreSQL refusing a statement: 400 sql, with the
// server's SQLSTATE when it gave one.
func sqlError(err error) error {
	e := controlapi.Fail(http.StatusBadRequest, controlapi.TypeSQL, err)
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		e.SQLState = pe.Code
	}
	return e
}

// participant is the PostgreSQL session for dsn, begun and joined to the
// booth transaction on first use.
func (st *sdkTx) participant(ctx context.Context, dsn string) (*pgtx.Participant, error) {
	if p := st.pg[dsn]; p != nil {
		return p, nil
	}
	p, err := pgtx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("sql: %w", err)
	}
	if err := canPrepare(ctx, p); err != nil {
		p.Rollback(ctx)
		p.Close(ctx)
		return nil, err
	}
	if st.inBooth {
		// Joined to the booth's transaction at the SDK commit (intoBooth).
		st.pg[dsn] = p
		return p, nil
	}
	if err := st.tx.Join(p); err != nil {
		p.Rollback(ctx)
		p.Close(ctx)
		return nil, err
	}
	st.pg[dsn] = p
	return p, nil
}

// canPrepare refuses a server that cannot prepare transactions
// (max_prepared_transactions = 0, PostgreSQL's default): its statements
// would run and only the commit fail.
func canPrepare(ctx context.Context, p *pgtx.Participant) error {
	var max int
	if err := p.QueryRow(ctx, "SELECT pg_catalog.current_setting('max_prepared_transactions')::int").Scan(&max); err != nil {
		return fmt.Errorf("sql: cannot read max_prepared_transactions: %w", err)
	}
	if max == 0 {
		return errors.New("sql: this PostgreSQL server has max_prepared_transactions = 0 (its default), so it " +
			"cannot prepare the statements to commit with the files: set max_prepared_transactions " +
			"above 0 in postgresql.conf (as many as transactions run at once) and restart it")
	}
	return nil
}
