package controlapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/mcp"
)

// fake is a Run that keeps each request it is given and answers with
// the value the test set for the route (or the error).
type fake struct {
	writes  []Write // every write, in order
	got     map[string]any
	answers map[string]any
	err     error
}

func newFake() *fake { return &fake{got: map[string]any{}, answers: map[string]any{}} }

// serve keeps req under name and answers with the value set for name.
func serve[Ans any](f *fake, name string, req any) (Ans, error) {
	f.got[name] = req
	ans, _ := f.answers[name].(Ans)
	return ans, f.err
}

func (f *fake) Info(context.Context) (Info, error) { return serve[Info](f, "info", nil) }
func (f *fake) Marker(_ context.Context, m Marker) (Frame, error) {
	return serve[Frame](f, "marker", m)
}
func (f *fake) Turn(_ context.Context, t Turn) (TurnAnswer, error) {
	return serve[TurnAnswer](f, "turn", t)
}
func (f *fake) Breaker(context.Context) (BreakerState, error) {
	return serve[BreakerState](f, "breaker", nil)
}
func (f *fake) End(_ context.Context, e End) (Ended, error) { return serve[Ended](f, "end", e) }
func (f *fake) Endpoint(_ context.Context, e Endpoint) (Endpoint, error) {
	return serve[Endpoint](f, "endpoint", e)
}
func (f *fake) MCPStart(_ context.Context, s MCPStart) (MCPSession, error) {
	return serve[MCPSession](f, "mcp/start", s)
}
func (f *fake) MCPMessage(_ context.Context, m MCPMessage) (Frame, error) {
	return serve[Frame](f, "mcp/message", m)
}
func (f *fake) MCPOutbox(_ context.Context, o MCPOutbox) (OutboxKey, error) {
	return serve[OutboxKey](f, "mcp/outbox", o)
}
func (f *fake) MCPLive(context.Context) (Live, error) { return serve[Live](f, "mcp/live", nil) }
func (f *fake) Begin(_ context.Context, b Begin) (Begun, error) {
	return serve[Begun](f, "tx", b)
}
func (f *fake) Tx(_ context.Context, id string) (Tx, error) {
	if id != "t1" {
		return nil, Failf(http.StatusNotFound, TypeNotFound, "no open transaction %q", id)
	}
	return fakeTx{f}, nil
}

type fakeTx struct{ f *fake }

func (t fakeTx) Write(_ context.Context, w Write) (Written, error) {
	t.f.writes = append(t.f.writes, w)
	return serve[Written](t.f, "write", w)
}
func (t fakeTx) Delete(_ context.Context, p PathOf) (PathOf, error) {
	return serve[PathOf](t.f, "delete", p)
}
func (t fakeTx) StagePath(_ context.Context, p PathOf) (Staged, error) {
	return serve[Staged](t.f, "stage-path", p)
}
func (t fakeTx) SQL(_ context.Context, q SQL) (Rows, error) { return serve[Rows](t.f, "sql", q) }
func (t fakeTx) Shell(_ context.Context, s Shell) (ShellResult, error) {
	return serve[ShellResult](t.f, "shell", s)
}
func (t fakeTx) Commit(context.Context) (Committed, error) {
	return serve[Committed](t.f, "commit", nil)
}
func (t fakeTx) Rollback(_ context.Context, r Rollback) (RolledBack, error) {
	return serve[RolledBack](t.f, "rollback", r)
}

// served is a Client of a Server over f.
func served(t *testing.T, f *fake) *Client {
	srv := httptest.NewServer(NewServer(f, "tok"))
	t.Cleanup(srv.Close)
	return &Client{Base: srv.URL + Prefix, Token: "tok"}
}

// TestClientServerRoundTrip: each request the Client makes reaches the
// Run as it was made, and the Run's answer comes back as it was given.
func TestClientServerRoundTrip(t *testing.T) {
	ctx := t.Context()
	f := newFake()
	c := served(t, f)
	tx, _ := c.Tx(ctx, "t1")
	c0 := "c"
	trip := &breaker.Trip{Rule: "cost", Reason: "r", Cost: 1.5, Evidence: []uint64{3}}
	cases := []struct {
		name      string
		req, resp any
		call      func() (any, error)
	}{
		{"info", nil, Info{API: 1, Calls: 2, Mode: "record", TapeID: "ab", Transactions: true}, func() (any, error) { return c.Info(ctx) }},
		{"marker", Marker{Label: "l", Note: "n"}, Frame{Frame: 4}, func() (any, error) { return c.Marker(ctx, Marker{Label: "l", Note: "n"}) }},
		{"turn", Turn{Agent: "a", Turn: 2, CostUSD: 0.5}, TurnAnswer{Frame: 5, Breaker: trip}, func() (any, error) { return c.Turn(ctx, Turn{Agent: "a", Turn: 2, CostUSD: 0.5}) }},
		{"breaker", nil, BreakerState{Tripped: true, Breaker: trip}, func() (any, error) { return c.Breaker(ctx) }},
		{"end", End{ExitCode: 3, Error: "e"}, Ended{Ended: true}, func() (any, error) { return c.End(ctx, End{ExitCode: 3, Error: "e"}) }},
		{"endpoint", Endpoint{Addr: "127.0.0.1:1"}, Endpoint{Addr: "127.0.0.1:1"}, func() (any, error) { return c.Endpoint(ctx, Endpoint{Addr: "127.0.0.1:1"}) }},
		{"mcp/start", MCPStart{Server: "s", Argv: []string{"x"}}, MCPSession{Session: 1, Replay: true, Messages: []mcp.Wire{{Dir: "to_server", Message: "{}"}}},
			func() (any, error) { return c.MCPStart(ctx, MCPStart{Server: "s", Argv: []string{"x"}}) }},
		{"mcp/message", MCPMessage{Server: "s", Session: 1, Dir: "from_server", Message: "m", Size: 1}, Frame{Frame: 6},
			func() (any, error) {
				return c.MCPMessage(ctx, MCPMessage{Server: "s", Session: 1, Dir: "from_server", Message: "m", Size: 1})
			}},
		{"mcp/outbox", MCPOutbox{Server: "s", Tool: "t", Arguments: json.RawMessage(`{"a":1}`)}, OutboxKey{Key: "k"},
			func() (any, error) {
				return c.MCPOutbox(ctx, MCPOutbox{Server: "s", Tool: "t", Arguments: json.RawMessage(`{"a":1}`)})
			}},
		{"mcp/live", nil, Live{Live: true}, func() (any, error) { return c.MCPLive(ctx) }},
		{"tx", Begin{Name: "n", MCPMode: "read_only"}, Begun{Tx: "t1", Workspace: "/w"}, func() (any, error) { return c.Begin(ctx, Begin{Name: "n", MCPMode: "read_only"}) }},
		{"write", Write{Path: "p", Content: &c0, Mode: 0o600}, Written{Path: "p", Size: 1}, func() (any, error) { return tx.Write(ctx, Write{Path: "p", Content: &c0, Mode: 0o600}) }},
		{"delete", PathOf{Path: "p"}, PathOf{Path: "p"}, func() (any, error) { return tx.Delete(ctx, PathOf{Path: "p"}) }},
		{"stage-path", PathOf{Path: "p"}, Staged{Path: "p", Staged: "/s/p"}, func() (any, error) { return tx.StagePath(ctx, PathOf{Path: "p"}) }},
		{"sql", SQL{DSN: "postgres://x", SQL: "select", Params: []json.RawMessage{json.RawMessage(`1`)}}, Rows{Columns: []string{"a"}, Rows: [][]any{{"x"}}, RowCount: 1},
			func() (any, error) {
				return tx.SQL(ctx, SQL{DSN: "postgres://x", SQL: "select", Params: []json.RawMessage{json.RawMessage(`1`)}})
			}},
		{"shell", Shell{Command: "ls"}, ShellResult{ExitCode: 1, Stdout: "o", Stderr: "e"}, func() (any, error) { return tx.Shell(ctx, Shell{Command: "ls"}) }},
		{"commit", nil, Committed{Tx: "t1", Changes: 2, Committed: true, MCPCalls: []OutboxResult{{Server: "s", Ran: true}}}, func() (any, error) { return tx.Commit(ctx) }},
		{"rollback", Rollback{Reason: "r"}, RolledBack{Tx: "t1", RolledBack: true}, func() (any, error) { return tx.Rollback(ctx, Rollback{Reason: "r"}) }},
	}
	for _, tc := range cases {
		f.answers[tc.name] = tc.resp
		got, err := tc.call()
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.resp) {
			t.Errorf("%s: answered %+v, want %+v", tc.name, got, tc.resp)
		}
		if req, ok := f.got[tc.name]; !ok || !reflect.DeepEqual(req, tc.req) {
			t.Errorf("%s: the run got %+v (%v), want %+v", tc.name, req, ok, tc.req)
		}
	}
	if len(cases)+1 != len(serverRoutes()) { // and batch: TestBatch
		t.Errorf("%d cases for %d routes", len(cases)+1, len(serverRoutes()))
	}
}

// TestBatch: a batch's operations reach the Run one by one, as their own
// requests would, their answers come back in order, and the first that
// fails ends the batch; an operation that cannot be batched is refused
// whole.
func TestBatch(t *testing.T) {
	ctx := t.Context()
	f := newFake()
	c := served(t, f)
	f.answers["write"], f.answers["commit"] = Written{Path: "p", Size: 1}, Committed{Tx: "t1", Changes: 1, Committed: true}
	got, err := c.Batch(ctx, "t1", Batch{Ops: []BatchOp{{Op: "write", Body: json.RawMessage(`{"path":"p","content":"c"}`)}, {Op: "commit"}}})
	if err != nil || len(got.Answers) != 2 || got.Answers[0].Status != 200 || got.Answers[1].Status != 200 ||
		string(got.Answers[0].Body) != `{"path":"p","size":1}` || !strings.Contains(string(got.Answers[1].Body), `"committed":true`) {
		t.Fatalf("batch: %+v, %v", got, err)
	}
	w, ok := f.got["write"].(Write)
	if data, err := w.Data(); !ok || w.Path != "p" || err != nil || string(data) != "c" {
		t.Errorf("the run got the write as %+v", f.got["write"])
	}
	f.got = map[string]any{}
	f.err = Failf(http.StatusConflict, TypeCommitConflict, "taken")
	got, err = c.Batch(ctx, "t1", Batch{Ops: []BatchOp{{Op: "delete", Body: json.RawMessage(`{"path":"q"}`)}, {Op: "commit"}}})
	if err != nil || len(got.Answers) != 1 || got.Answers[0].Status != http.StatusConflict || !strings.Contains(string(got.Answers[0].Body), "taken") {
		t.Errorf("a batch whose first operation fails: %+v, %v", got, err)
	}
	if _, ok := f.got["commit"]; ok {
		t.Error("the operation after the one that failed was served")
	}
	f.got = map[string]any{}
	if _, err := c.Batch(ctx, "t1", Batch{Ops: []BatchOp{{Op: "write", Body: json.RawMessage(`{"path":"p","content":"c"}`)}, {Op: "sql"}}}); err == nil || !strings.Contains(err.Error(), `"sql" cannot be batched`) {
		t.Errorf("a batch holding sql: %v", err)
	}
	if len(f.got) != 0 {
		t.Errorf("a refused batch served %v", f.got)
	}
}

// TestClientErrors: an error the run answers comes back to the Client as
// the same *Error; a refused call is mcp.ErrNotHeld on both sides.
func TestClientErrors(t *testing.T) {
	ctx := t.Context()
	f := newFake()
	c := served(t, f)
	want := &Error{Status: http.StatusConflict, Type: TypeCommitConflict, Message: "jukebox: conflict",
		Conflicts: []Conflict{{Path: "a", Reason: "changed"}}}
	f.err = want
	tx, _ := c.Tx(ctx, "t1")
	_, err := tx.Commit(ctx)
	var got *Error
	if !errors.As(err, &got) || !reflect.DeepEqual(got, want) {
		t.Errorf("commit: %#v, want %#v", err, want)
	}
	f.err = &Error{Status: http.StatusForbidden, Type: TypeRefused, Message: "jukebox: no", Err: fmt.Errorf("%w: why", mcp.ErrNotHeld)}
	if _, err := c.MCPOutbox(ctx, MCPOutbox{}); !errors.Is(err, mcp.ErrNotHeld) || err.Error() != "jukebox: no" {
		t.Errorf("a refused call: %v", err)
	}
	f.err = errors.New("disk full")
	if _, err := c.Marker(ctx, Marker{}); !errors.As(err, &got) || got.Status != 500 || got.Type != TypeTape || got.Message != "jukebox: disk full" {
		t.Errorf("a plain error: %#v", err)
	}
	// An answer JSON cannot carry (a NaN in a row) went as an empty 200,
	// which the client read as no rows.
	f.err, f.answers["sql"] = nil, Rows{Columns: []string{"x"}, Rows: [][]any{{math.NaN()}}}
	rows, err := tx.SQL(ctx, SQL{})
	if !errors.As(err, &got) || got.Status != 500 || !strings.Contains(got.Message, "cannot be written as JSON") {
		t.Errorf("an answer JSON cannot carry: %+v, %v", rows, err)
	}
}

// TestServerRefuses: no token is 401, an unknown key 400, an unknown
// transaction 404 before its body is read, an unknown operation 404.
func TestServerRefuses(t *testing.T) {
	f := newFake()
	c := served(t, f)
	post := func(token, path, body string) (int, string) {
		req, _ := http.NewRequest("POST", c.Base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var e errorBody
		json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == nil {
			return resp.StatusCode, ""
		}
		return resp.StatusCode, e.Error.Type + ": " + e.Error.Message
	}
	for _, tc := range []struct {
		token, path, body string
		status            int
		msg               string
	}{
		{"x", "/v1/marker", `{}`, 401, "unauthorized: jukebox: the control API needs the run's token: Authorization: Bearer $JUKEBOX_CONTROL_TOKEN"},
		{"tok", "/v1/turn", `{"cost":1}`, 400, `bad_request: jukebox: json: unknown field "cost"`},
		{"tok", "/v1/tx/t2/write", `not json`, 404, `not_found: jukebox: no open transaction "t2"`},
		{"tok", "/v1/tx/t1/chmod", `{}`, 404, "not_found: jukebox: no transaction operation chmod (" + txOps + ")"},
		{"tok", "/v1/tx", ``, 200, ""},
		{"tok", "/marker", `{"label":"x"}`, 200, ""},
	} {
		if status, msg := post(tc.token, tc.path, tc.body); status != tc.status || msg != tc.msg {
			t.Errorf("%s %s: %d %q, want %d %q", tc.path, tc.body, status, msg, tc.status, tc.msg)
		}
	}
	if f.got["marker"] != (Marker{Label: "x"}) {
		t.Errorf("the unversioned marker: %v", f.got["marker"])
	}
}
