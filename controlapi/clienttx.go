package controlapi

import (
	"context"
	"net/url"
)

// clientTx is an open transaction's operations over HTTP.
type clientTx struct {
	c  *Client
	id string
}

// path is operation op's path.
func (t clientTx) path(op string) string { return "tx/" + url.PathEscape(t.id) + "/" + op }

// Write calls POST /v1/tx/ID/write.
func (t clientTx) Write(ctx context.Context, w Write) (Written, error) {
	return call[Written](ctx, t.c, "POST", t.path("write"), w)
}

// Delete calls POST /v1/tx/ID/delete.
func (t clientTx) Delete(ctx context.Context, p PathOf) (PathOf, error) {
	return call[PathOf](ctx, t.c, "POST", t.path("delete"), p)
}

// StagePath calls POST /v1/tx/ID/stage-path.
func (t clientTx) StagePath(ctx context.Context, p PathOf) (Staged, error) {
	return call[Staged](ctx, t.c, "POST", t.path("stage-path"), p)
}

// SQL calls POST /v1/tx/ID/sql.
func (t clientTx) SQL(ctx context.Context, q SQL) (Rows, error) {
	return call[Rows](ctx, t.c, "POST", t.path("sql"), q)
}

// Shell calls POST /v1/tx/ID/shell.
func (t clientTx) Shell(ctx context.Context, s Shell) (ShellResult, error) {
	return call[ShellResult](ctx, t.c, "POST", t.path("shell"), s)
}

// Commit calls POST /v1/tx/ID/commit.
func (t clientTx) Commit(ctx context.Context) (Committed, error) {
	return call[Committed](ctx, t.c, "POST", t.path("commit"), nil)
}

// Rollback calls POST /v1/tx/ID/rollback.
func (t clientTx) Rollback(ctx context.Context, r Rollback) (RolledBack, error) {
	return call[RolledBack](ctx, t.c, "POST", t.path("rollback"), r)
}

// Batch calls POST /v1/tx/ID/batch for the transaction id, sending the
// contents of its writes after the JSON (BatchContentType).
func (c *Client) Batch(ctx context.Context, id string, b Batch) (Batched, error) {
	data, err := b.Binary()
	if err != nil {
		return Batched{}, err
	}
	return call[Batched](ctx, c, "POST", clientTx{c, id}.path("batch"), encoded{data, BatchContentType})
}
