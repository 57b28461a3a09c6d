package controlapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// txOps are the operations of an open transaction, for the error that
// names an unknown one.
const txOps = "write, delete, stage-path, sql, shell, commit, rollback, batch"

// BatchOps are the operations a batch (POST /v1/tx/ID/batch) may hold.
var BatchOps = []string{"write", "delete", "commit", "rollback"}

// txRoutes serves POST /v1/tx/{id}/OP.
func (s *Server) txRoutes() {
	run := s.run
	s.handle("POST", "/v1/tx/{id}/write", txRoute(run, required, Tx.Write))
	s.handle("POST", "/v1/tx/{id}/delete", txRoute(run, required, Tx.Delete))
	s.handle("POST", "/v1/tx/{id}/stage-path", txRoute(run, required, Tx.StagePath))
	s.handle("POST", "/v1/tx/{id}/sql", txRoute(run, required, Tx.SQL))
	s.handle("POST", "/v1/tx/{id}/shell", txRoute(run, required, Tx.Shell))
	s.handle("POST", "/v1/tx/{id}/commit", txRoute(run, noBody, func(t Tx, ctx context.Context, _ struct{}) (Committed, error) {
		return t.Commit(ctx)
	}))
	s.handle("POST", "/v1/tx/{id}/rollback", txRoute(run, optional, Tx.Rollback))
	s.handle("POST", "/v1/tx/{id}/batch", typed[Batch, Batched](func(w http.ResponseWriter, r *http.Request) { ServeBatch(w, r, s) }))
	// Any other operation: the transaction is looked up first, as for
	// the others, so an unknown id is not_found whatever the operation.
	s.mux.HandleFunc("POST "+Prefix+"/v1/tx/{id}/{op}", func(w http.ResponseWriter, r *http.Request) {
		if _, err := run.Tx(r.Context(), r.PathValue("id")); err != nil {
			answer(w, nil, err)
			return
		}
		answer(w, nil, Failf(http.StatusNotFound, TypeNotFound, "no transaction operation %s (%s)", r.PathValue("op"), txOps))
	})
}

// txRoute is a handler of a transaction's operation: the transaction is
// found (404 when it is not open), then its body read and call called.
func txRoute[Req, Ans any](run Run, b body, call func(Tx, context.Context, Req) (Ans, error)) handler {
	return typed[Req, Ans](func(w http.ResponseWriter, r *http.Request) {
		t, err := run.Tx(r.Context(), r.PathValue("id"))
		if err != nil {
			answer(w, nil, err)
			return
		}
		var req Req
		if !readReq(w, r, b, &req) {
			return
		}
		ans, err := call(t, r.Context(), req)
		answer(w, ans, err)
	})
}

// IsBatch says whether path (under Prefix) is a transaction's batch.
func IsBatch(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/tx/")
	id, op, _ := strings.Cut(rest, "/")
	return ok && id != "" && op == "batch"
}

// CommitOf is the transaction path (under Prefix) commits, if it is a
// commit.
func CommitOf(path string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1/tx/")
	id, op, _ := strings.Cut(rest, "/")
	return id, ok && id != "" && op == "commit"
}

// ServeBatch serves POST /v1/tx/ID/batch: each operation as a request of
// its own to serve (the server itself, or a handler in front of it that
// tapes each one), in order, stopping after the first that fails.
func ServeBatch(w http.ResponseWriter, r *http.Request, serve http.Handler) {
	var b Batch
	if !readBatch(w, r, &b) {
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, Prefix+"/v1/tx/")
	id, _, _ := strings.Cut(rest, "/")
	for i, op := range b.Ops {
		if !slices.Contains(BatchOps, op.Op) {
			answer(w, nil, Failf(http.StatusBadRequest, TypeBadRequest, "batch op %d: %q cannot be batched (%s can)", i, op.Op, strings.Join(BatchOps, ", ")))
			return
		}
	}
	out := Batched{Answers: make([]BatchAnswer, 0, len(b.Ops))}
	for i := range b.Ops {
		op := &b.Ops[i]
		sub := r.Clone(withOp(r.Context(), op))
		sub.URL.Path, sub.URL.RawPath = fmt.Sprintf("%s/v1/tx/%s/%s", Prefix, id, op.Op), ""
		sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(op.Body)), int64(len(op.Body))
		if op.lazy != nil {
			sub.Body, sub.ContentLength = io.NopCloser(&bodyReader{op: op}), -1
		}
		rec := &subAnswer{h: http.Header{}, status: http.StatusOK}
		if op.refused != nil {
			answer(rec, nil, op.refused) // never served, nor taped: a replay refuses it alike
		} else {
			serve.ServeHTTP(rec, sub)
		}
		out.Answers = append(out.Answers, BatchAnswer{Status: rec.status, Body: bytes.TrimSpace(rec.body.Bytes())})
		if rec.status != http.StatusOK {
			break
		}
	}
	answer(w, out, nil)
}

// subAnswer keeps the answer to an operation of a batch.
type subAnswer struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (a *subAnswer) Header() http.Header         { return a.h }
func (a *subAnswer) WriteHeader(status int)      { a.status = status }
func (a *subAnswer) Write(b []byte) (int, error) { return a.body.Write(b) }
