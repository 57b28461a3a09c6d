package controlapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
)

// Run is what the control API serves: the run that records (or replays)
// an agent. Each method answers one route; an error that is an *Error
// chooses the answer's status and type, any other is a 500 tape error.
// Client implements Run over HTTP.
type Run interface {
	Info(ctx context.Context) (Info, error)
	Marker(ctx context.Context, m Marker) (Frame, error)
	Turn(ctx context.Context, t Turn) (TurnAnswer, error)
	Breaker(ctx context.Context) (BreakerState, error)
	End(ctx context.Context, e End) (Ended, error)
	Endpoint(ctx context.Context, e Endpoint) (Endpoint, error)
	MCPStart(ctx context.Context, s MCPStart) (MCPSession, error)
	MCPMessage(ctx context.Context, m MCPMessage) (Frame, error)
	MCPOutbox(ctx context.Context, o MCPOutbox) (OutboxKey, error)
	MCPLive(ctx context.Context) (Live, error)
	Begin(ctx context.Context, b Begin) (Begun, error)
	// Tx is the open transaction id; a 404 not_found *Error when there
	// is none.
	Tx(ctx context.Context, id string) (Tx, error)
}

// Tx is an open transaction of a Run: the operations of
// POST /v1/tx/ID/OP.
type Tx interface {
	Write(ctx context.Context, w Write) (Written, error)
	Delete(ctx context.Context, p PathOf) (PathOf, error)
	StagePath(ctx context.Context, p PathOf) (Staged, error)
	SQL(ctx context.Context, q SQL) (Rows, error)
	Shell(ctx context.Context, s Shell) (ShellResult, error)
	Commit(ctx context.Context) (Committed, error)
	Rollback(ctx context.Context, r Rollback) (RolledBack, error)
}

// Route is one request the API serves: its method and its path under
// Prefix, with {id} for a transaction's id, and the Go types of its body
// (struct{} when it reads none) and its answer.
type Route struct {
	Method, Path    string
	Request, Answer reflect.Type
}

// handler is a route's handler and its types.
type handler struct {
	serve           http.HandlerFunc
	request, answer reflect.Type
}

// typed is h with the types of Req and Ans.
func typed[Req, Ans any](h http.HandlerFunc) handler {
	return handler{h, reflect.TypeFor[Req](), reflect.TypeFor[Ans]()}
}

// body says how a route reads its request body.
type body int

const (
	noBody   body = iota // the body is not read
	optional             // an empty body is the zero request
	required             // the body must decode
)

// Server serves the control API over a Run, to the holder of its token.
type Server struct {
	run    Run
	token  string
	build  func() // makes mux and routes, once
	mux    *http.ServeMux
	routes []Route
}

// NewServer serves run to requests that carry token. Its routes are made
// when first needed: most runs never call the control API, and making
// them is a third of a millisecond before each agent starts.
func NewServer(run Run, token string) *Server {
	s := &Server{run: run, token: token}
	s.build = sync.OnceFunc(s.addRoutes)
	return s
}

// addRoutes makes the server's mux and routes.
func (s *Server) addRoutes() {
	run := s.run
	s.mux = http.NewServeMux()
	for _, v := range []string{"/v1", ""} { // the unversioned paths are v1's
		s.handle("GET", v+"/info", route(noBody, func(ctx context.Context, _ struct{}) (Info, error) { return run.Info(ctx) }))
		s.handle("POST", v+"/marker", route(required, run.Marker))
		s.handle("POST", v+"/turn", route(required, run.Turn))
	}
	s.handle("GET", "/v1/breaker", route(noBody, func(ctx context.Context, _ struct{}) (BreakerState, error) { return run.Breaker(ctx) }))
	s.handle("POST", "/v1/end", route(optional, run.End))
	s.handle("POST", "/v1/endpoint", route(required, run.Endpoint))
	s.handle("POST", "/v1/mcp/start", route(required, run.MCPStart))
	s.handle("POST", "/v1/mcp/message", route(required, run.MCPMessage))
	s.handle("POST", "/v1/mcp/outbox", route(required, run.MCPOutbox))
	s.handle("GET", "/v1/mcp/live", route(noBody, func(ctx context.Context, _ struct{}) (Live, error) { return run.MCPLive(ctx) }))
	s.handle("POST", "/v1/tx", route(optional, run.Begin))
	s.txRoutes()
}

// handle serves method path (under Prefix) with h.
func (s *Server) handle(method, path string, h handler) {
	s.mux.HandleFunc(method+" "+Prefix+path, h.serve)
	s.routes = append(s.routes, Route{method, path, h.request, h.answer})
}

// Routes are the requests the server serves, in the order it took them.
func (s *Server) Routes() []Route {
	s.build()
	return s.routes
}

// Authorized says whether r carries the run's token.
func (s *Server) Authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

// ServeHTTP checks the token, then routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.Authorized(r) {
		answer(w, nil, &Error{Status: http.StatusUnauthorized, Type: TypeUnauthorized,
			Message: "jukebox: the control API needs the run's token: Authorization: Bearer $" + TokenEnv})
		return
	}
	s.build()
	s.mux.ServeHTTP(w, r)
}

// route is a handler that reads a Req as b says, calls call and answers.
func route[Req, Ans any](b body, call func(context.Context, Req) (Ans, error)) handler {
	return typed[Req, Ans](func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if !readReq(w, r, b, &req) {
			return
		}
		ans, err := call(r.Context(), req)
		answer(w, ans, err)
	})
}

// readReq reads r's request into req: read, or the request a batch
// decoded already.
func readReq[Req any](w http.ResponseWriter, r *http.Request, b body, req *Req) bool {
	if d, ok := decodedBody(r.Context()).(*Req); ok {
		*req = *d
		return true
	}
	return read(w, r, b, req)
}

// read decodes r's body into v as b says: at most MaxBody, refusing
// unknown keys; false means it answered 400.
func read(w http.ResponseWriter, r *http.Request, b body, v any) bool {
	if b == noBody || b == optional && r.ContentLength == 0 {
		return true
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		answer(w, nil, Fail(http.StatusBadRequest, TypeBadRequest, err))
		return false
	}
	return true
}

// Answer writes v, or err as an error answer, as the server does.
func Answer(w http.ResponseWriter, v any, err error) { answer(w, v, err) }

// answer writes v, or err as an error answer.
func answer(w http.ResponseWriter, v any, err error) {
	status := http.StatusOK
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			e = Fail(http.StatusInternalServerError, TypeTape, err)
		}
		status, v = e.Status, errorBody{e}
	}
	body, merr := json.Marshal(v)
	if merr != nil {
		// An answer JSON cannot carry is the server's failure, said as
		// one: it went as an empty 200, which a client read as nothing.
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorBody{Fail(status, TypeTape, fmt.Errorf("the answer cannot be written as JSON: %w", merr))})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
