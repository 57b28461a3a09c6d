package engine

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/jukebox-os/jukebox/controlapi"
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
	inBooth bool   // a booth run: commits go into the booth's transaction
	// keeps: the booth run will keep its transaction open for a later
	// decision (Keep, or CommitAsk with no one to ask), which no
	// PostgreSQL session outlives.
	keeps   bool
	session *session

	mu        sync.Mutex
	open      map[string]*sdkTx
	pending   []*sdkTx // committed in a booth run, staged into the booth at its end (intoBooth)
	order     []string // open transactions, the latest last
	recovered bool

	// In a booth run, while the agent runs: the booth's transaction and
	// the agent's view of the workspace (sandbox.ExecOptions.View), which
	// a commit is applied in (sdkbooth.go); viewMu is held while it is.
	viewMu sync.Mutex
	booth  *sandbox.Tx
	view   *os.Root
	// recorded is, in a replay, what each transaction's commit changed
	// when recorded (replayedCommit), read once.
	recordedOnce sync.Once
	recorded     map[string]recordedCommit
	recordedErr  error
	notApplied   []string // paths of those answered outside a booth, under viewMu
}

// stagedMCP is the transaction an MCP call the policy holds goes to, when
// the agent has one open (its latest) staging MCP calls, else nil; and
// that latest transaction's mcp_mode ("" when none is open).
func (t *sdkTxs) stagedMCP() (*sdkTx, string) {
	if !t.available() {
		return nil, ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.order) - 1; i >= 0; i-- {
		if st := t.open[t.order[i]]; st != nil {
			if st.mcpMode == "" || st.mcpMode == "staged_acid" {
				return st, "staged_acid"
			}
			return nil, st.mcpMode
		}
	}
	return nil, ""
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
	// statements counts the SQL statements run, for the commit's answer.
	statements int
	// sql is what the sessions hold for the decision, by DSN (dsns), for
	// the tx.commit or tx.rollback frame (keep); scs is each session's
	// standard_conforming_strings.
	sql     []tapefmt.SQLSession
	dsns    []string
	scs     []bool
	inBooth bool     // commits into the booth's transaction (intoBooth)
	applied bool     // committed in a booth run, in the agent's view already (intoView)
	real    *os.Root // the workspace, opened once for checkBase; closed by forget
	// viewBase are, in a booth run, the files as the agent saw them when
	// it staged each write (its FileBase), by path: the commit into its
	// view checks them (intoView).
	viewBase map[string]controlapi.FileBase
	// inPlace are the paths given a staged copy to change in place
	// (stage-path: SQLite databases), whose WAL the commit checks (walConflict).
	inPlace []string
	// ended: committed or rolled back (forget), under mu. A request that
	// found the transaction open and waited for mu behind the one that
	// ended it is answered as one that came after (not found), and writes
	// no frame: concurrent commits and rollbacks put tx.rollback frames
	// after the tx.commit of a transaction that had committed.
	ended bool
}

// newSDKTxs are the transactions of a session: a recording, or a fork
// from its fork point on, serves them over its workspace outside the
// booth; a booth run or a replay says why not (a replay answers them from
// the tape, controltape.go).
func newSDKTxs(s *session) *sdkTxs {
	t := &sdkTxs{session: s}
	switch {
	case s.mode == tapefmt.ModeReplay:
		// A replay answers transactions from the tape's control frames
		// (controltape.go); one that reaches here has none.
		t.why = "the tape holds no control-API exchange to answer this from: the recorded agent began no transaction (or the tape was recorded before jukebox kept them, then record it again)"
	default:
		// In the booth a transaction commits into the booth's own
		// (sdkbooth.go), settled with the run as --commit says.
		t.ws, t.inBooth = s.workspace(), s.o.Booth != nil
		t.keeps = t.inBooth && (s.o.Booth.Keep || s.o.Booth.Commit == CommitAsk && s.o.Booth.Ask == nil)
		t.recovered = t.inBooth // the booth recovered the workspace before it began
	}
	return t
}

// available says whether this run serves transactions.
func (t *sdkTxs) available() bool { return t != nil && t.ws != "" }

// Begin starts a transaction: its id and the workspace.
func (c *control) Begin(ctx context.Context, req controlapi.Begin) (controlapi.Begun, error) {
	switch req.MCPMode {
	case "", "staged_acid", "read_only", "passthrough":
	default:
		return controlapi.Begun{}, controlapi.BadRequest("mcp_mode %s: staged_acid, read_only or passthrough", strconv.Quote(req.MCPMode))
	}
	t := c.txs
	if !t.available() {
		why := "this run serves no transactions"
		if t != nil && t.why != "" {
			why = t.why
		}
		return controlapi.Begun{}, controlapi.Failf(http.StatusConflict, controlapi.TypeUnavailable, "%s", why)
	}
	tx, err := t.begin(ctx, req.MCPMode)
	if err != nil {
		return controlapi.Begun{}, controlapi.Fail(http.StatusInternalServerError, controlapi.TypeSandbox, err)
	}
	t.session.appendFrame(tapefmt.TxBegin{Tx: tx.ID(), Workspace: t.ws, Mode: tapefmt.StagingSDK})
	return controlapi.Begun{Tx: tx.ID(), Workspace: t.ws}, nil
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
	tx, err := sandbox.Begin(t.ws, sandbox.Options{Whole: true, Observer: func(e sandbox.Event) {
		if e.Kind == sandbox.EventChange {
			t.session.recordChange(id, "", e.Change)
		}
	}})
	if err != nil {
		return nil, err
	}
	id = tx.ID()
	// Its commit may not change the tape that records it (nor its folder,
	// as a booth run keeps it from the agent): in the booth this is held
	// where it is applied (unstageable).
	tx.Keep(t.session.protected())
	tx.AsCaller() // no file the agent may not write itself
	if t.open == nil {
		t.open = map[string]*sdkTx{}
	}
	t.open[id] = &sdkTx{tx: tx, pg: map[string]*pgtx.Participant{}, mcpMode: mcpMode, inBooth: t.inBooth}
	t.order = append(t.order, id)
	return tx, nil
}

// commit commits the transaction. A conflict, or a change the booth
// cannot commit, leaves it open.
func (t *sdkTxs) commit(ctx context.Context, st *sdkTx) (controlapi.Committed, error) {
	if err := walConflict(t.ws, st.inPlace); err != nil {
		return controlapi.Committed{}, err
	}
	commit := st.tx.Commit
	if t.inBooth {
		commit = func(context.Context) (sandbox.ChangeSet, error) { return t.pendBooth(st) }
	}
	cs, err := commit(ctx)
	if err != nil {
		e := txError(err)
		if st.tx.Closed() {
			t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: "commit failed: " + err.Error(), SQL: st.sqlWork()})
			t.forget(ctx, st)
			if ce, ok := errors.AsType[*controlapi.Error](e); ok {
				ce.RolledBack = true
			}
		}
		return controlapi.Committed{}, e
	}
	t.session.appendFrame(tapefmt.TxCommit{Tx: st.tx.ID(), Changes: len(cs.Changes), SQL: st.sqlWork()})
	held := t.takeHeld(st)
	t.forget(ctx, st)
	out := controlapi.Committed{Tx: st.tx.ID(), Changes: cs.Files(), Statements: st.statements, Committed: true}
	if len(held) > 0 {
		// The agent's own transaction: its commit is its say-so, as its own
		// tool calls are (nothing here confines it).
		out.MCPCalls = RunHeld(context.WithoutCancel(ctx), held, t.session.childEnv(false), t.ws, t.session.outboxRecorder)
	}
	return out, nil
}

// end rolls a transaction back with the reason, on the tape.
func (t *sdkTxs) end(ctx context.Context, st *sdkTx, reason string) error {
	err := st.tx.Rollback(ctx)
	if err == nil || st.tx.Closed() {
		t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: reason, SQL: st.sqlWork()})
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
	st.ended = true
	for _, p := range st.pg {
		p.Close(ctx)
	}
	st.pg = nil
	if st.real != nil {
		st.real.Close()
		st.real = nil
	}
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
		if st.ended {
			st.mu.Unlock()
			continue
		}
		t.end(ctx, st, "the run ended with the transaction open")
		st.tx.Release() // a rollback that failed leaves it to a booth command
		st.mu.Unlock()
	}
}
