package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
)

// SQL runs a statement in the transaction's PostgreSQL session for the
// DSN, begun and joined to the booth transaction on first use.
func (o txOps) SQL(ctx context.Context, req controlapi.SQL) (controlapi.Rows, error) {
	if !strings.HasPrefix(req.DSN, "postgres://") && !strings.HasPrefix(req.DSN, "postgresql://") {
		return controlapi.Rows{}, controlapi.BadRequest(
			"sql: a PostgreSQL URL (postgres://...) is staged here; a SQLite file is staged with the workspace (stage-path)")
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
	return query(ctx, part, req.SQL, args)
}

// sqlParams are a statement's parameters: JSON values, numbers as int64
// when they are whole, else float64.
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
			} else {
				v, _ = n.Float64()
			}
		}
		args[i] = v
	}
	return args, nil
}

// query runs sql in part: its columns, rows and rows affected.
func query(ctx context.Context, part *pgtx.Participant, sql string, args []any) (controlapi.Rows, error) {
	rows, err := part.Query(ctx, sql, args...)
	if err != nil {
		return controlapi.Rows{}, sqlError(err)
	}
	out := controlapi.Rows{Columns: []string{}, Rows: [][]any{}}
	for _, f := range rows.FieldDescriptions() {
		out.Columns = append(out.Columns, f.Name)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return controlapi.Rows{}, sqlError(err)
		}
		out.Rows = append(out.Rows, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return controlapi.Rows{}, sqlError(err)
	}
	out.RowCount = rows.CommandTag().RowsAffected()
	return out, nil
}

// sqlError is PostgreSQL refusing a statement: 400 sql.
func sqlError(err error) error {
	return controlapi.Fail(http.StatusBadRequest, controlapi.TypeSQL, err)
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
