package controlapi

import (
	"context"
	"net/http"
)

// txOps are the operations of an open transaction, for the error that
// names an unknown one.
const txOps = "write, delete, stage-path, sql, shell, commit, rollback"

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
		if !read(w, r, b, &req) {
			return
		}
		ans, err := call(t, r.Context(), req)
		answer(w, ans, err)
	})
}
