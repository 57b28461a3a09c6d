package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// sdkTxs are the transactions an agent runs through the control API (the
// Python SDK's record_agent_turn): booth transactions over the run's
// workspace that it begins, stages into, commits and rolls back itself.
// Each goes on the tape as a booth run's does: tx.begin, a file.change per
// change as it is committed, tx.commit or tx.rollback with the reason.
// PostgreSQL joins a transaction through the prepared-transaction
// participant (one decision with the files).
type sdkTxs struct {
	ws      string // the workspace; "" when this run serves no transactions
	why     string // why it serves none
	session *session

	mu        sync.Mutex
	open      map[string]*sdkTx
	order     []string // open transactions, the latest last
	recovered bool
}

// stagedMCP is the transaction an MCP call the policy holds goes to, when
// the agent has one open (its latest) staging MCP calls, else nil.
func (t *sdkTxs) stagedMCP() *sdkTx {
	if !t.available() {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.order) - 1; i >= 0; i-- {
		if st := t.open[t.order[i]]; st != nil {
			if st.mcpMode == "" || st.mcpMode == "staged_acid" {
				return st
			}
			return nil
		}
	}
	return nil
}

// sdkTx is one open transaction and its database sessions.
type sdkTx struct {
	mu sync.Mutex
	tx *sandbox.Tx
	pg map[string]*pgtx.Participant // by DSN; closed when the transaction ends
	// mcpMode is the SDK's SandboxPolicy.mcp_mode: "staged_acid" (the
	// default) holds the MCP calls a policy holds until this commits.
	mcpMode string
	held    []HeldCall // MCP calls held for the commit (stagedMCP)
}

// newSDKTxs are the transactions of a session: a recording outside the
// booth serves them over its workspace; a booth run or a replay says why
// not.
func newSDKTxs(s *session) *sdkTxs {
	t := &sdkTxs{session: s}
	switch {
	case s.mode != tapefmt.ModeRecord:
		t.why = "transactions run when recording (record, serve): a " + string(s.mode) + " does not redo side effects"
	case s.o.Booth != nil:
		t.why = "the run is in the booth, which stages every write of the agent already and settles them as --commit says; SDK transactions run in recordings outside the booth"
	default:
		t.ws = s.workspace()
	}
	return t
}

// available says whether this run serves transactions.
func (t *sdkTxs) available() bool { return t != nil && t.ws != "" }

// begin starts a transaction: {"name"} → {"tx", "workspace"}.
func (c *control) begin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name    string `json:"name"`
		MCPMode string `json:"mcp_mode"`
	}
	if r.ContentLength != 0 && !decode(w, r, &req) {
		return
	}
	switch req.MCPMode {
	case "", "staged_acid", "read_only", "passthrough":
	default:
		controlError(w, http.StatusBadRequest, "bad_request", "jukebox: mcp_mode "+strconv.Quote(req.MCPMode)+": staged_acid, read_only or passthrough")
		return
	}
	t := c.txs
	if !t.available() {
		why := "this run serves no transactions"
		if t != nil && t.why != "" {
			why = t.why
		}
		controlError(w, http.StatusConflict, "unavailable", "jukebox: "+why)
		return
	}
	tx, err := t.begin(r.Context(), req.MCPMode)
	if err != nil {
		controlError(w, http.StatusInternalServerError, "sandbox", "jukebox: "+err.Error())
		return
	}
	t.session.appendFrame(tapefmt.TxBegin{Tx: tx.ID(), Workspace: t.ws, Mode: tapefmt.StagingSDK})
	writeControl(w, http.StatusOK, map[string]any{"tx": tx.ID(), "workspace": t.ws})
}

func (t *sdkTxs) begin(ctx context.Context, mcpMode string) (*sandbox.Tx, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.recovered {
		// A commit a crash interrupted is finished or undone first, as
		// before a booth run (one that prepared PostgreSQL work needs
		// jukebox booth recover --pg DSN, which this error says).
		if _, err := sandbox.Recover(ctx, t.ws, sandbox.Options{}); err != nil {
			return nil, err
		}
		t.recovered = true
	}
	var id string
	tx, err := sandbox.Begin(t.ws, sandbox.Options{Observer: func(e sandbox.Event) {
		if e.Kind == sandbox.EventChange {
			t.session.recordChange(id, "", e.Change)
		}
	}})
	if err != nil {
		return nil, err
	}
	id = tx.ID()
	if t.open == nil {
		t.open = map[string]*sdkTx{}
	}
	t.open[id] = &sdkTx{tx: tx, pg: map[string]*pgtx.Participant{}, mcpMode: mcpMode}
	t.order = append(t.order, id)
	return tx, nil
}

// txOp runs one operation on an open transaction.
func (c *control) txOp(w http.ResponseWriter, r *http.Request) {
	t := c.txs
	var st *sdkTx
	if t.available() {
		t.mu.Lock()
		st = t.open[r.PathValue("id")]
		t.mu.Unlock()
	}
	if st == nil {
		controlError(w, http.StatusNotFound, "not_found", fmt.Sprintf("jukebox: no open transaction %q", r.PathValue("id")))
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	ctx := context.WithoutCancel(r.Context())
	switch op := r.PathValue("op"); op {
	case "write":
		var req struct {
			Path    string `json:"path"`
			Content string `json:"content"`
			Base64  bool   `json:"base64"`
			Mode    uint32 `json:"mode"`
		}
		if !decode(w, r, &req) {
			return
		}
		data := []byte(req.Content)
		if req.Base64 {
			var err error
			if data, err = base64.StdEncoding.DecodeString(req.Content); err != nil {
				controlError(w, http.StatusBadRequest, "bad_request", "jukebox: content: "+err.Error())
				return
			}
		}
		perm := fs.FileMode(0o644)
		if req.Mode != 0 {
			perm = fs.FileMode(req.Mode & 0o777)
		}
		txAnswer(w, st.tx.Files().WriteFile(req.Path, data, perm), map[string]any{"path": req.Path, "size": len(data)})
	case "delete":
		var req struct {
			Path string `json:"path"`
		}
		if decode(w, r, &req) {
			txAnswer(w, st.tx.Files().Remove(req.Path), map[string]any{"path": req.Path})
		}
	case "stage-path":
		// The staged copy of a file (copied up, created empty when there
		// is none), for a client that changes it in place: a SQLite
		// database, which the commit swaps in whole.
		var req struct {
			Path string `json:"path"`
		}
		if !decode(w, r, &req) {
			return
		}
		f, err := st.tx.Files().OpenFile(req.Path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			txAnswer(w, err, nil)
			return
		}
		f.Close()
		writeControl(w, http.StatusOK, map[string]any{"path": req.Path, "staged": f.Name()})
	case "sql":
		st.sql(ctx, w, r)
	case "shell":
		st.shell(ctx, w, r)
	case "commit":
		t.commit(ctx, w, st)
	case "rollback":
		var req struct {
			Reason string `json:"reason"`
		}
		if r.ContentLength != 0 && !decode(w, r, &req) {
			return
		}
		err := t.end(ctx, st, req.Reason)
		txAnswer(w, err, map[string]any{"tx": st.tx.ID(), "rolled_back": err == nil})
	default:
		controlError(w, http.StatusNotFound, "not_found", "jukebox: no transaction operation "+op+" (write, delete, stage-path, sql, shell, commit, rollback)")
	}
}

// txAnswer answers ok with v, or the error with its type: a path that
// leaves the workspace is sandbox_violation (403), a missing one
// not_found, a conflict at commit commit_conflict (409).
func txAnswer(w http.ResponseWriter, err error, v any) {
	var ce *sandbox.ConflictError
	switch {
	case err == nil:
		writeControl(w, http.StatusOK, v)
	case errors.Is(err, sandbox.ErrEscape), errors.Is(err, sandbox.ErrStatePath), errors.Is(err, sandbox.ErrInvalidPath):
		controlError(w, http.StatusForbidden, "sandbox_violation", "jukebox: "+err.Error())
	case errors.As(err, &ce):
		paths := make([]map[string]string, len(ce.Conflicts))
		for i, c := range ce.Conflicts {
			paths[i] = map[string]string{"path": c.Path, "reason": c.Reason}
		}
		writeControl(w, http.StatusConflict, map[string]any{"error": map[string]any{"type": "commit_conflict",
			"message": "jukebox: " + err.Error(), "conflicts": paths}})
	case errors.Is(err, fs.ErrNotExist):
		controlError(w, http.StatusNotFound, "not_found", "jukebox: "+err.Error())
	default:
		controlError(w, http.StatusInternalServerError, "sandbox", "jukebox: "+err.Error())
	}
}

// sql runs a statement in the transaction's PostgreSQL session for the
// DSN (begun, and joined to the booth transaction, on first use):
// {"dsn", "sql", "params"} → {"columns", "rows", "rowcount"}.
func (st *sdkTx) sql(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req struct {
		DSN    string            `json:"dsn"`
		SQL    string            `json:"sql"`
		Params []json.RawMessage `json:"params"`
	}
	if !decode(w, r, &req) {
		return
	}
	if !strings.HasPrefix(req.DSN, "postgres://") && !strings.HasPrefix(req.DSN, "postgresql://") {
		controlError(w, http.StatusBadRequest, "bad_request",
			"jukebox: sql: a PostgreSQL URL (postgres://...) is staged here; a SQLite file is staged with the workspace (stage-path)")
		return
	}
	args := make([]any, len(req.Params))
	for i, raw := range req.Params {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			controlError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("jukebox: params[%d]: %v", i, err))
			return
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
	part, err := st.participant(ctx, req.DSN)
	if err != nil {
		controlError(w, http.StatusBadGateway, "sql", "jukebox: "+err.Error())
		return
	}
	rows, err := part.Query(ctx, req.SQL, args...)
	if err != nil {
		controlError(w, http.StatusBadRequest, "sql", "jukebox: "+err.Error())
		return
	}
	out := map[string]any{"columns": []string{}, "rows": [][]any{}}
	var cols []string
	for _, f := range rows.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	var data [][]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			controlError(w, http.StatusBadRequest, "sql", "jukebox: "+err.Error())
			return
		}
		data = append(data, vals)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		controlError(w, http.StatusBadRequest, "sql", "jukebox: "+err.Error())
		return
	}
	if cols != nil {
		out["columns"] = cols
	}
	if data != nil {
		out["rows"] = data
	}
	out["rowcount"] = rows.CommandTag().RowsAffected()
	writeControl(w, http.StatusOK, out)
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
	if err := st.tx.Join(p); err != nil {
		p.Rollback(ctx)
		p.Close(ctx)
		return nil, err
	}
	st.pg[dsn] = p
	return p, nil
}

// shell runs a command in the booth's shell over the staged workspace:
// {"command"} → {"exit_code", "stdout", "stderr"}.
func (st *sdkTx) shell(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command string `json:"command"`
	}
	if !decode(w, r, &req) {
		return
	}
	file, err := syntax.NewParser().Parse(strings.NewReader(req.Command), "")
	if err != nil {
		controlError(w, http.StatusBadRequest, "bad_request", "jukebox: shell: "+err.Error())
		return
	}
	var stdout, stderr bytes.Buffer
	run, err := sandbox.Shell(st.tx, sandbox.ShellOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		txAnswer(w, err, nil)
		return
	}
	code := 0
	if err := run.Run(r.Context(), file); err != nil {
		var st interp.ExitStatus
		if !errors.As(err, &st) {
			txAnswer(w, err, nil)
			return
		}
		code = int(st)
	}
	writeControl(w, http.StatusOK, map[string]any{"exit_code": code, "stdout": stdout.String(), "stderr": stderr.String()})
}

// commit commits the transaction: {"tx", "changes"}. A conflict, or a
// change the booth cannot commit, leaves it open.
func (t *sdkTxs) commit(ctx context.Context, w http.ResponseWriter, st *sdkTx) {
	cs, err := st.tx.Commit(ctx)
	if err != nil {
		if st.tx.Closed() {
			t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: "commit failed: " + err.Error()})
			t.forget(ctx, st)
		}
		txAnswer(w, err, nil)
		return
	}
	t.session.appendFrame(tapefmt.TxCommit{Tx: st.tx.ID(), Changes: len(cs.Changes)})
	held := t.takeHeld(st)
	t.forget(ctx, st)
	out := map[string]any{"tx": st.tx.ID(), "changes": len(cs.Changes), "committed": true}
	if len(held) > 0 {
		// The agent's own transaction: its commit is its say-so, as its own
		// tool calls are (nothing here confines it).
		out["mcp_calls"] = RunHeld(context.WithoutCancel(ctx), held, t.session.childEnv(false), t.ws, t.session.outboxRecorder)
	}
	writeControl(w, http.StatusOK, out)
}

// end rolls a transaction back with the reason, on the tape.
func (t *sdkTxs) end(ctx context.Context, st *sdkTx, reason string) error {
	err := st.tx.Rollback(ctx)
	if err == nil || st.tx.Closed() {
		t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: reason})
		t.forget(ctx, st)
	}
	return err
}

// takeHeld empties a transaction's held MCP calls.
func (t *sdkTxs) takeHeld(st *sdkTx) []HeldCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := st.held
	st.held = nil
	return held
}

// forget drops a finished transaction and closes its connections; the
// MCP calls it held, if any are left, are dropped with it.
func (t *sdkTxs) forget(ctx context.Context, st *sdkTx) {
	for _, p := range st.pg {
		p.Close(ctx)
	}
	st.pg = nil
	t.mu.Lock()
	delete(t.open, st.tx.ID())
	t.order = slices.DeleteFunc(t.order, func(id string) bool { return id == st.tx.ID() })
	st.held = nil
	t.mu.Unlock()
}

// closeAll rolls back what the run left open when it ended.
func (t *sdkTxs) closeAll(ctx context.Context) {
	if t == nil {
		return
	}
	t.mu.Lock()
	open := make([]*sdkTx, 0, len(t.open))
	for _, st := range t.open {
		open = append(open, st)
	}
	t.mu.Unlock()
	for _, st := range open {
		st.mu.Lock()
		t.end(ctx, st, "the run ended with the transaction open")
		st.mu.Unlock()
	}
}
