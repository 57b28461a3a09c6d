package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// CommitPolicy says what becomes of a booth run's staged changes when the
// agent ends. It is not written to the tape: the tape records what
// happened (tx.commit or tx.rollback), and a rollback's reason names the
// policy.
type CommitPolicy string

// Commit policies for a run in the booth.
const (
	CommitAsk       CommitPolicy = "ask"        // show the change set and ask
	CommitOnSuccess CommitPolicy = "on-success" // commit when the agent exits 0
	CommitAlways    CommitPolicy = "always"     // commit whatever the agent did
	CommitNever     CommitPolicy = "never"      // roll back (or keep, with Keep)
)

// ErrNoAsk is the error, and the staged changes are rolled back, when the
// commit policy is CommitAsk, the agent changed something and
// BoothOptions.Ask is nil: there is no one to ask.
var ErrNoAsk = errors.New("booth: the commit policy is ask and there is no one to ask")

// BoothOptions run the agent inside the Shadow Booth: its workspace (the
// run's directory) is staged copy-on-write and committed or rolled back at
// the end, as Commit says.
type BoothOptions struct {
	Commit CommitPolicy // "" is CommitNever
	Keep   bool         // leave the transaction open instead of rolling back
	Mode   sandbox.Mode // staging mode; "" is auto: the overlay, confined, or the agent is not started
	// Ask decides for CommitAsk; it is shown the change set, those of the
	// staged folders outside the workspace (Stage), the MCP calls held
	// for the commit (the outbox; Approve marks those only a person may
	// let run) and the participants' database work (Work).
	Ask    func(sandbox.ChangeSet, []RootChanges, []OutboxResult, []tapefmt.SQLSession) (bool, error)
	Notice io.Writer // where the one-line staging-mode notice goes
	// Net is the agent's network (sandbox.NetNone: only the recorder, the
	// control API and Endpoints are reachable). WriteLive are absolute
	// paths outside the workspace it may write unstaged.
	Net       sandbox.Net
	WriteLive []string
	// Hermetic, with Net none, refuses the agent's plain TCP instead of
	// carrying it: nothing leaves but through jukebox's proxy and
	// endpoints. Dial is how carried connections reach their host (nil
	// is net.Dialer; tests and --route point names elsewhere).
	Hermetic bool
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	// Stage are folders outside the workspace staged with it (absolute):
	// copy-on-write in the booth, committed or rolled back with the
	// workspace, as one (sandbox.Tx.StageRoot). They need the overlay.
	Stage     []string
	Endpoints []string // more 127.0.0.1:PORT endpoints served for the run
	// Attach, when set, runs once the transaction has begun, before the
	// agent starts: it joins participants to tx (the --pg endpoint) and
	// returns variables for the agent's environment ("" removes one).
	// Resolvers finish such participants after a crash (sandbox.Recover).
	Attach    func(ctx context.Context, tx *sandbox.Tx) (map[string]string, error)
	Resolvers []sandbox.Resolver
	// Work, when set, runs once the agent has ended, before the decision:
	// it stops the participants Attach joined and returns what they hold
	// (the --pg endpoint's sessions and statements), which is part of the
	// one decision: asked about, listed (BoothResult.SQL) and written on
	// tx.commit or tx.rollback.
	Work func(tx *sandbox.Tx) []tapefmt.SQLSession
	// Grace is how long the agent has to exit after the first stop signal
	// (RunOptions.Signals) was passed on to it; a second signal, or the
	// end of grace, kills it. 0 is DefaultGrace.
	Grace time.Duration
	// Snapshot writes the workspace as the run found it on the tape
	// (ws.snapshot), so the tape alone rebuilds it at any frame.
	Snapshot bool
}

// RootChanges are the staged changes of a folder outside the workspace
// (BoothOptions.Stage), relative to it.
type RootChanges struct {
	Root    string            `json:"root"`
	Changes sandbox.ChangeSet `json:"changes"`
}

// BoothResult is what happened to the staged changes. When the change set
// holds refused entries (Changes.Refused) the transaction is kept open
// whatever the policy, for the user to decide: Refused says so.
// LeftWorkspace reports whether a run may have left something in its
// workspace: it ran outside the booth, or its booth committed or kept its
// transaction open. A run refused before it started (nil), or whose
// booth rolled back, left the workspace as it found it.
func (r *Result) LeftWorkspace() bool {
	return r != nil && (r.Booth == nil || r.Booth.Committed || r.Booth.Kept)
}

type BoothResult struct {
	Tx      string            `json:"tx"`
	Mode    sandbox.Mode      `json:"mode"`
	Changes sandbox.ChangeSet `json:"changes"`
	// Roots are the changes staged in the folders outside the workspace
	// (--allow-write), committed or rolled back with Changes.
	Roots     []RootChanges `json:"roots,omitempty"`
	Committed bool          `json:"committed"`
	Kept      bool          `json:"kept"`              // left open for `jukebox booth`
	Refused   bool          `json:"refused,omitempty"` // kept open because entries were refused
	// Confined: the agent ran confined (the overlay booth), so it could
	// not write the workspace but through the staging area.
	Confined bool `json:"confined"`
	// CopyPaths are the files a copy-mode agent wrote that still name the
	// copy's folder, gone after the run (binary files; text is rewritten).
	CopyPaths []string `json:"copy_paths,omitempty"`
	// Foreign counts the workspace's entries a non-root overlay booth
	// could not let the agent change (another user's or group's).
	Foreign int `json:"foreign,omitempty"`
	// Pending is set when a commit could neither finish nor be undone:
	// its journal waits for `jukebox booth recover`.
	Pending bool `json:"pending,omitempty"`
	// Outbox are the MCP tool calls the booth held (jukebox mcp --policy):
	// run once the commit was done, or dropped with a rollback.
	Outbox []OutboxResult `json:"outbox,omitempty"`
	// SQL is the agent's database work (BoothOptions.Work), committed or
	// rolled back with the files.
	SQL []tapefmt.SQLSession `json:"sql,omitempty"`
	// Interrupted: a stop signal came while the agent ran or at the
	// question. Such a run is never committed: it is kept open (rolled
	// back under CommitNever without Keep).
	Interrupted bool `json:"interrupted,omitempty"`
	// Undecided says why the question got no decision (ErrUndecided): the
	// transaction was kept open.
	Undecided string `json:"undecided,omitempty"`
}

// RefusedCount is how many entries were refused, in the workspace and in
// the folders staged with it (--allow-write).
func (b *BoothResult) RefusedCount() int {
	n := len(b.Changes.Refused)
	for _, r := range b.Roots {
		n += len(r.Changes.Refused)
	}
	return n
}

// OutboxResult is how a held MCP tool call went: the booth's outbox
// and an SDK transaction's commit answer it alike (controlapi).
type OutboxResult = controlapi.OutboxResult

// runBooth runs the agent as a booth child and settles its changes.
func (s *session) runBooth(ctx context.Context, env []string, res *Result) (tapefmt.RunEnd, error) {
	b := s.o.Booth
	ws := s.workspace()
	// A commit a crash interrupted is finished or undone before the agent
	// sees the workspace.
	rep, err := sandbox.Recover(ctx, ws, sandbox.Options{}, b.Resolvers...)
	if b.Notice != nil {
		recoverNotice(b.Notice, rep)
	}
	var tx *sandbox.Tx
	if err == nil {
		if tx, err = sandbox.Begin(ws, sandbox.Options{}); err == nil {
			// Decided, or kept for a booth command (another process) to
			// decide: this process is done with it when the run is.
			defer tx.Release()
		}
	}
	for _, root := range b.Stage {
		if err == nil {
			_, err = tx.StageRoot(root)
		}
	}
	if err == nil {
		env, err = attach(ctx, b, tx, env)
	}
	if err != nil {
		return tapefmt.RunEnd{ExitCode: -1, Error: err.Error()}, err
	}
	// auto and overlay run the agent confined or not at all
	// (sandbox.ErrCannotConfine), so this holds before it starts.
	confined := b.Mode != sandbox.ModeCopy && b.Mode != sandbox.ModeReflink
	s.appendFrame(tapefmt.TxBegin{Tx: tx.ID(), Workspace: ws, Mode: b.Mode, Confined: &confined})
	if b.Snapshot {
		if err := s.snapshot(tx); err != nil {
			rerr := tx.Rollback(context.WithoutCancel(ctx))
			s.appendFrame(tapefmt.TxRollback{Tx: tx.ID(), Reason: err.Error()})
			return tapefmt.RunEnd{ExitCode: -1, Error: err.Error()}, errors.Join(err, rerr)
		}
	}
	endSteps := s.startSteps(tx, b.Mode)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.cancel.Store(&cancel)
	stop := stopOnSignals(s.o.Signals, b.Grace, cancel)
	out := s.outs
	carryCtx, endCarry := context.WithCancel(ctx)
	stdout, stderr := out.writer(1, s.o.Stdout), out.writer(2, s.o.Stderr)
	eo := sandbox.ExecOptions{Args: s.o.Argv, Env: env, Stdin: s.o.Stdin,
		Stdout: stdout, Stderr: stderr, Mode: b.Mode, Notice: out.serial(b.Notice),
		Net: b.Net, Endpoints: append(append([]string{s.proxy.addr()}, s.mcpAddrs()...), b.Endpoints...), WriteLive: b.WriteLive,
		Protect: s.protected(), Signals: stop.fwd, OnNetRefused: s.netRefused, Carry: s.carrier(carryCtx)}
	if txs := s.proxy.control.txs; txs != nil {
		// An SDK commit reaches the agent's view at once, live or, in a
		// replay, as recorded.
		eo.View = txs.boothView(tx)
	}
	er, err := sandbox.Exec(ctx, tx, eo)
	stdout.flush() // the streams have ended: Exec waited for them
	stderr.flush()
	endCarry()
	endSteps()
	s.netResult(res)
	end := tapefmt.RunEnd{ExitCode: er.ExitCode}
	if errors.Is(err, sandbox.ErrCannotConfine) || errors.Is(err, sandbox.ErrNotStarted) {
		// The agent never started: there is nothing to settle.
		end.Error = err.Error()
		rerr := tx.Rollback(context.WithoutCancel(ctx))
		s.appendFrame(tapefmt.TxRollback{Tx: tx.ID(), Reason: err.Error()})
		return end, errors.Join(err, rerr)
	}
	if er.Signal != 0 {
		end.Signal = signalName(syscall.Signal(er.Signal))
	}
	if err != nil {
		end.Error = err.Error()
	}
	interrupted := stop.stop()
	if ctx.Err() != nil || interrupted {
		end.Reason = tapefmt.ReasonInterrupted
	}
	if err := s.proxy.control.txs.intoBooth(context.WithoutCancel(ctx), tx); err != nil && b.Notice != nil {
		fmt.Fprintf(b.Notice, "jukebox: booth: the agent's committed SDK transactions could not all be staged: %v\n", err)
	}
	res.Booth = &BoothResult{Tx: tx.ID(), Mode: er.Mode, Confined: er.Confined, CopyPaths: er.CopyPaths, Foreign: er.Foreign, Interrupted: interrupted}
	return end, s.settle(ctx, tx, end, res.Booth)
}

// settle records every staged change and every refused entry, then
// commits, rolls back or keeps. A change set with refused entries is kept
// open, whatever the policy, for the user to decide. When the change set
// cannot be read or the decision made, it rolls back, unless Keep says to
// keep the transaction whatever happened.
func (s *session) settle(ctx context.Context, tx *sandbox.Tx, end tapefmt.RunEnd, br *BoothResult) error {
	err := s.decideTx(ctx, tx, end, br)
	s.leave(tx, br, br.outcome(tx))
	return err
}

// boothOutcome is how a settled transaction was left, read once from the
// BoothResult (outcome) and acted on once (leave).
type boothOutcome int

const (
	outcomeClosed      boothOutcome = iota // committed or rolled back: nothing held
	outcomeKeptOpen                        // kept open for jukebox booth commit
	outcomePendingOpen                     // a commit left pending, the transaction open
	outcomeHeldClosed                      // kept or pending, the transaction closed
)

// outcome is how br left tx.
func (br *BoothResult) outcome(tx *sandbox.Tx) boothOutcome {
	switch {
	case !br.Kept && !br.Pending:
		return outcomeClosed
	case tx.Closed():
		return outcomeHeldClosed
	case br.Kept:
		return outcomeKeptOpen
	}
	return outcomePendingOpen
}

// leave does what o asks: what a transaction left open holds must outlive
// a crash (a later jukebox booth commit applies it); a kept one keeps its
// held MCP calls for that commit, otherwise a kept or pending one drops
// them, listed.
func (s *session) leave(tx *sandbox.Tx, br *BoothResult, o boothOutcome) {
	if o == outcomeKeptOpen || o == outcomePendingOpen {
		if err := tx.Flush(); err != nil && s.o.Booth.Notice != nil {
			fmt.Fprintf(s.o.Booth.Notice, "jukebox: booth: %v\n", err)
		}
	}
	switch o {
	case outcomeKeptOpen:
		br.Outbox = s.keepOutbox(tx)
	case outcomePendingOpen, outcomeHeldClosed:
		br.Outbox = s.dropOutbox()
	}
}

// decideTx records the changes and commits, rolls back or keeps tx.
func (s *session) decideTx(ctx context.Context, tx *sandbox.Tx, end tapefmt.RunEnd, br *BoothResult) error {
	if s.o.Booth.Work != nil {
		br.SQL = s.o.Booth.Work(tx)
	}
	cs, err := s.diffRoot(tx, tx.ID(), "")
	var commit bool
	if err == nil {
		br.Changes = cs
		refused := len(cs.Refused)
		for _, root := range tx.Roots() {
			rcs, rerr := s.diffRoot(root, tx.ID(), root.Root())
			if rerr != nil {
				err = rerr
				break
			}
			br.Roots = append(br.Roots, RootChanges{Root: root.Root(), Changes: rcs})
			refused += len(rcs.Refused)
		}
		if err == nil && refused > 0 {
			br.Kept, br.Refused = true, true
			return nil
		}
		if err == nil && br.Interrupted && (s.o.Booth.Commit != CommitNever || s.o.Booth.Keep) {
			br.Kept = true // never committed, whatever the policy
			return nil
		}
		if err == nil {
			commit, err = s.decide(cs, br.Roots, br.SQL, end)
		}
	}
	if errors.Is(err, ErrUndecided) || errors.Is(err, ErrInterrupted) {
		br.Kept, br.Undecided = true, err.Error()
		br.Interrupted = br.Interrupted || errors.Is(err, ErrInterrupted)
		return nil
	}
	if err != nil && s.o.Booth.Keep {
		br.Kept = true
		return err
	}
	if err != nil {
		rerr := tx.Rollback(context.WithoutCancel(ctx))
		s.appendFrame(tapefmt.TxRollback{Tx: tx.ID(), Reason: err.Error(), SQL: br.SQL})
		return errors.Join(err, rerr)
	}
	switch {
	case commit:
		if _, err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
			// A refused commit, or one whose changes were undone, leaves
			// the transaction open: never report it rolled back.
			var ce *sandbox.CommitError
			switch {
			case !tx.Closed():
				br.Kept = true
			case errors.As(err, &ce) && ce.RolledBack && ce.Restored, !stateLeft(tx):
				// Undone whole, or refused before anything was decided (a
				// participant that could not prepare) and rolled back.
				s.appendFrame(tapefmt.TxRollback{Tx: tx.ID(), Reason: err.Error(), SQL: br.SQL})
			default:
				br.Pending = true
			}
			return fmt.Errorf("booth commit: %w", err)
		}
		br.Committed = true
		s.appendFrame(tapefmt.TxCommit{Tx: tx.ID(), Changes: len(cs.Changes), SQL: br.SQL})
		br.Outbox = s.runOutbox(ctx)
	case s.o.Booth.Keep:
		br.Kept = true
	default:
		if err := tx.Rollback(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("booth rollback: %w", err)
		}
		s.appendFrame(tapefmt.TxRollback{Tx: tx.ID(), Reason: rollbackReason(s.o.Booth.Commit, end), SQL: br.SQL})
		br.Outbox = s.dropOutbox()
	}
	return nil
}

// HeldCall is an MCP tool call the booth held for its commit, with the
// session it came from and the command line (or URL) that reaches its
// server again.
type HeldCall struct {
	Server  string   `json:"server"`
	Session int      `json:"session"`
	Argv    []string `json:"argv"`
	mcp.Call
	Approve bool `json:"approve,omitempty"`
}

// takeOutbox empties the run's outbox into held calls.
func (s *session) takeOutbox() []HeldCall {
	c := s.proxy.control
	c.mcp.mu.Lock()
	defer c.mcp.mu.Unlock()
	held := make([]HeldCall, len(c.mcp.outbox))
	for i, e := range c.mcp.outbox {
		held[i] = HeldCall{Server: e.server, Session: e.session, Argv: c.mcp.argv[e.mcpKey], Call: e.Call, Approve: e.approve}
	}
	c.mcp.outbox = nil
	return held
}

// runOutbox runs the MCP tool calls the booth held, now that the commit
// is done, every message on the tape (RunHeld). Only when a person
// approved the commit (--commit ask), having seen each call and the
// command that runs it: the command line, the policy and the calls all
// come from inside the booth, where the agent could have chosen them, so
// without that yes they are dropped, and said.
func (s *session) runOutbox(ctx context.Context) []OutboxResult {
	held := s.takeOutbox()
	if !s.approved {
		out := make([]OutboxResult, len(held))
		for i, h := range held {
			out[i] = h.Result()
			out[i].Error = "not run: a held call runs outside the booth only with a person's yes to the commit (--commit ask)"
		}
		return out
	}
	return RunHeld(context.WithoutCancel(ctx), held, s.childEnv(false), s.workspace(), s.outboxRecorder)
}

// outboxRecorder records the messages of a held session's run at the
// commit on the tape, marked as the outbox's.
func (s *session) outboxRecorder(server string, session int) mcp.Recorder {
	c := s.proxy.control
	return func(m mcp.Message) {
		c.recordMCP(mcp.Wire{Server: server, Session: session, Dir: m.Dir, Message: string(m.Raw), Size: m.Size,
			Problem: strings.TrimPrefix(m.Problem+"; ", "; ") + "the outbox, run at the commit"})
	}
}

// RunHeld makes held calls, a person having said yes: each session's
// server started again outside the booth (its command line, in dir, with
// env) or reached at its URL, its calls made in order with their
// idempotency keys. rec, if set, hears each session's messages.
func RunHeld(ctx context.Context, held []HeldCall, env []string, dir string, rec func(server string, session int) mcp.Recorder) []OutboxResult {
	var out []OutboxResult
	for len(held) > 0 {
		first := held[0]
		var calls []mcp.Call
		var these []HeldCall
		rest := held[:0:0]
		for _, h := range held {
			if h.Server == first.Server && h.Session == first.Session {
				calls, these = append(calls, h.Call), append(these, h)
			} else {
				rest = append(rest, h)
			}
		}
		held = rest
		r := func(mcp.Message) {}
		if rec != nil {
			r = rec(first.Server, first.Session)
		}
		var results []mcp.CallResult
		var err error
		switch u, ok := httpServer(first.Argv); {
		case ok: // record --mcp-url, jukebox mcp --url
			results, err = mcp.RunCallsHTTP(ctx, u, calls, r)
		case len(first.Argv) == 0:
			err = errors.New("the server's command line is not known")
		default:
			results, err = mcp.RunCalls(ctx, first.Argv, env, dir, calls, r)
		}
		for i, h := range these {
			res := h.Result()
			switch {
			case i < len(results) && (results[i].Result != nil || results[i].Error != ""):
				res.Ran, res.Error = true, results[i].Error
			case err != nil:
				res.Error = err.Error()
			}
			out = append(out, res)
		}
	}
	return out
}

// Result is the held call as an OutboxResult, not run yet.
func (h HeldCall) Result() OutboxResult {
	return OutboxResult{Server: h.Server, Tool: h.Tool, Key: h.Key, Approve: h.Approve, Args: h.Args, Argv: h.Argv}
}

// httpServer reports whether a session's command line is an HTTP
// server's URL (its start frame's argv, for record --mcp-url and jukebox
// mcp --url), not a command.
func httpServer(argv []string) (string, bool) {
	if len(argv) != 1 {
		return "", false
	}
	u, err := url.Parse(argv[0])
	return argv[0], err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// heldOutbox lists the MCP calls the booth holds, for the commit question.
func (s *session) heldOutbox() []OutboxResult {
	c := s.proxy.control
	c.mcp.mu.Lock()
	defer c.mcp.mu.Unlock()
	out := make([]OutboxResult, len(c.mcp.outbox))
	for i, e := range c.mcp.outbox {
		out[i] = OutboxResult{Server: e.server, Tool: e.Tool, Key: e.Key, Approve: e.approve, Args: e.Args, Argv: c.mcp.argv[e.mcpKey]}
	}
	return out
}

// dropOutbox drops the held MCP tool calls with the rollback.
func (s *session) dropOutbox() []OutboxResult {
	held := s.takeOutbox()
	out := make([]OutboxResult, len(held))
	for i, h := range held {
		out[i] = h.Result()
	}
	return out
}

// keepOutbox keeps the held calls with the kept transaction (Tx.Defer),
// for jukebox booth commit to offer; when they cannot be kept they are
// dropped, and said.
func (s *session) keepOutbox(tx *sandbox.Tx) []OutboxResult {
	held := s.takeOutbox()
	out := make([]OutboxResult, len(held))
	for i, h := range held {
		out[i] = h.Result()
	}
	if len(held) == 0 {
		return out
	}
	data, err := json.Marshal(held)
	if err == nil {
		err = tx.Defer(data)
	}
	for i := range out {
		if err != nil {
			out[i].Error = "not kept with the transaction: " + err.Error()
		} else {
			out[i].Kept = true
		}
	}
	return out
}

// recoverNotice says what Recover did before the run, and which
// transactions it left alone because their journals are not trusted.
func recoverNotice(w io.Writer, rep sandbox.RecoverReport) {
	if len(rep.Committed)+len(rep.RolledBack) > 0 {
		fmt.Fprintf(w, "jukebox: booth: recovered interrupted commits: finished %v, undone %v\n", rep.Committed, rep.RolledBack)
	}
	if len(rep.Restored) > 0 {
		fmt.Fprintf(w, "jukebox: booth: commits that could not finish were undone, the workspace restored, the transactions left open: %v\n", rep.Restored)
	}
	for _, u := range rep.Untrusted {
		fmt.Fprintf(w, "jukebox: booth: %s: %s: not applied; jukebox booth discard %s removes it\n", u.ID, u.Reason, u.ID)
	}
}

// diffRoot reads the change set of the workspace's transaction (root "")
// or of a staged folder's, and records it under the booth transaction
// txID: a file.change frame per change and per refused entry, named by
// root and relative path.
func (s *session) diffRoot(tx *sandbox.Tx, txID, root string) (sandbox.ChangeSet, error) {
	cs, err := tx.Diff()
	if err != nil {
		return cs, err
	}
	for i := range cs.Changes {
		s.recordChange(txID, root, &cs.Changes[i])
	}
	for _, r := range cs.Refused {
		s.appendFrame(tapefmt.FileChange{Tx: txID, Root: root, Op: tapefmt.OpRefused, Path: r.Path, Refused: r.Kind, Reason: r.Reason})
	}
	return cs, nil
}

func (s *session) decide(cs sandbox.ChangeSet, roots []RootChanges, sql []tapefmt.SQLSession, end tapefmt.RunEnd) (bool, error) {
	switch s.o.Booth.Commit {
	case CommitAlways:
		return true, nil
	case CommitOnSuccess:
		return end.ExitCode == 0 && end.Signal == "" && end.Reason == "", nil
	case CommitAsk:
		held := s.heldOutbox()
		empty := cs.Empty() && len(held) == 0 && len(sql) == 0
		for _, r := range roots {
			empty = empty && r.Changes.Empty()
		}
		if empty {
			return false, nil
		}
		if s.o.Booth.Ask == nil {
			return false, ErrNoAsk
		}
		ok, err := s.o.Booth.Ask(cs, roots, held, sql)
		s.approved = ok && err == nil
		return ok, err
	}
	return false, nil
}

func rollbackReason(policy CommitPolicy, end tapefmt.RunEnd) string {
	if policy == CommitOnSuccess {
		return fmt.Sprintf("agent exit %d", end.ExitCode)
	}
	return "commit policy " + string(policy)
}

// recordChange writes one file.change frame of the change set, with the
// content as a blob; root names a staged folder outside the workspace
// ("" is the workspace).
func (s *session) recordChange(txID, root string, c *sandbox.Change) {
	s.appendFrame(s.changeFrame(txID, root, c, 0, nil))
}

func (s *session) appendFrame(p tapefmt.Payload) {
	if s.tape == nil {
		return
	}
	if _, err := s.tape.Append(0, p); err != nil && s.proxy != nil {
		s.proxy.wrote(p.Kind().String(), err) // the run's result says so (finish)
	}
}

// MaxNetRefusedFrames bounds the net.refused frames of a run: an agent
// that retries a connection in a loop must not fill the tape. The result
// counts every refusal (Result.NetRefused).
const MaxNetRefusedFrames = 100

// stateLeft reports whether a closed transaction left its state folder
// (a journal for booth recover): one a failed commit discarded whole was
// rolled back, with nothing to recover.
func stateLeft(tx *sandbox.Tx) bool {
	_, err := os.Lstat(tx.StateDir())
	return err == nil
}
