package engine

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// mcpSessions are the MCP sessions of a run, reported by `jukebox mcp`
// through the control API: numbered per server name when recorded, and
// found again by name and number when replayed.
type mcpSessions struct {
	mu      sync.Mutex
	started map[string]int // server name → sessions started in this run
	// active is set once a session started: from then on the model's
	// tool calls are kept (calls), for tools/call requests to link to.
	active atomic.Bool
	calls  []askedCall
	// argv are the sessions' command lines (their start frames), by
	// server and session, for the outbox to start a server again.
	argv map[mcpKey][]string
	// outboxOn: a booth run, whose commit runs the outbox.
	outboxOn bool
	outbox   []outboxEntry
	held     int // calls held so far, for their keys
	// policy is the user's (RunOptions.MCPPolicy, read outside the
	// booth), which alone lets a booth run hold a call to run on the host
	// (mcp.Policy.HostCall); own are the sessions jukebox itself serves
	// (--mcp-url), whose server the agent did not choose.
	policy *mcp.Policy
	own    map[mcpKey]bool
	// served are the recorded sessions a replay or a fork answered from,
	// and missing counts the requests it answered with an error because
	// the recorded session did not hold them (mcp.NotRecorded).
	served  map[mcpKey]bool
	missing int
	// messages counts the messages recorded (recordMCP).
	messages int
}

// count is how many messages the run's sessions reported.
func (m *mcpSessions) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.messages
}

// markOwn notes that jukebox itself serves session k (record --mcp-url).
func (m *mcpSessions) markOwn(k mcpKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.own == nil {
		m.own = map[mcpKey]bool{}
	}
	m.own[k] = true
}

type mcpKey struct {
	server  string
	session int
}

// outboxEntry is a tools/call held until the booth commits; approve: only
// with a person's yes.
type outboxEntry struct {
	mcpKey
	mcp.Call
	approve bool
}

// askedCall is a tool call a model's answer made.
type askedCall struct {
	frame    uint64 // its llm.response frame
	id, name string
	args     string // canonical JSON
	linked   bool
}

// maxAsked bounds the tool calls kept for linking.
const maxAsked = 256

// asked keeps the tool calls of a recorded answer (frame seq).
func (m *mcpSessions) asked(seq uint64, resp *tapefmt.LLMResponse, body []byte) {
	_, uses := llmwire.ResponseAnswer(llmwire.DecodeBody(resp.Header, body).Text)
	if len(uses) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range uses {
		m.calls = append(m.calls, askedCall{frame: seq, id: u.ID, name: u.Name, args: mcp.Canonical([]byte(u.Args))})
	}
	if over := len(m.calls) - maxAsked; over > 0 {
		m.calls = append(m.calls[:0], m.calls[over:]...)
	}
}

// link finds the model's tool call a tools/call request carries out: the
// latest one not linked yet with the same tool name and arguments.
func (m *mcpSessions) link(message []byte) *tapefmt.ToolLink {
	_, tool, rawArgs, ok := mcp.ToolCall(message)
	if !ok {
		return nil
	}
	args := mcp.Canonical(rawArgs)
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.calls) - 1; i >= 0; i-- {
		c := &m.calls[i]
		if !c.linked && c.name == tool && c.args == args {
			c.linked = true
			return &tapefmt.ToolLink{Frame: c.frame, ID: c.id}
		}
	}
	return nil
}

// MCPStart opens a session (openMCP): its number, and in a replay or a
// fork the recorded session to answer from.
func (c *control) MCPStart(_ context.Context, req controlapi.MCPStart) (controlapi.MCPSession, error) {
	if req.Server == "" {
		return controlapi.MCPSession{}, controlapi.BadRequest("mcp start: no server name")
	}
	o, err := c.openMCP(req.Server, map[string]any{"argv": req.Argv})
	var ns *noSessionError
	switch {
	case errors.As(err, &ns):
		return controlapi.MCPSession{}, controlapi.Fail(http.StatusConflict, controlapi.TypeNoSession, err)
	case err != nil:
		return controlapi.MCPSession{}, err
	}
	var policy json.RawMessage
	if c.mcp.policy != nil {
		if policy, err = json.Marshal(c.mcp.policy); err != nil {
			return controlapi.MCPSession{}, err
		}
	}
	if o.replay {
		return controlapi.MCPSession{Session: o.session, Replay: true, LiveLater: o.liveLater, Messages: o.messages, Policy: policy}, nil
	}
	return controlapi.MCPSession{Session: o.session, Policy: policy}, nil
}

// mcpOpened is a session openMCP opened.
type mcpOpened struct {
	session   int
	replay    bool       // answer from messages, do not start the server
	liveLater bool       // a fork: go live once mcpLive says so
	messages  []mcp.Wire // the recorded session, for a replay
}

// openMCP opens session N of server (start is the start frame's message,
// its argv and anything else to keep): recorded from here on, or, in a
// replay or a fork, with the recorded session of that name and number
// (else the one started in that place) to answer from. A replay whose
// tape has no such session is a *noSessionError; a fork runs it live.
func (c *control) openMCP(server string, start map[string]any) (mcpOpened, error) {
	c.mcp.mu.Lock()
	if c.mcp.started == nil {
		c.mcp.started = map[string]int{}
	}
	c.mcp.started[server]++
	c.mcp.active.Store(true)
	n := c.mcp.started[server]
	if argv, ok := start["argv"].([]string); ok {
		if c.mcp.argv == nil {
			c.mcp.argv = map[mcpKey][]string{}
		}
		c.mcp.argv[mcpKey{server, n}] = argv
	}
	order := 0
	for _, k := range c.mcp.started {
		order += k
	}
	c.mcp.mu.Unlock()
	msg, _ := json.Marshal(start)
	if _, err := c.append(tapefmt.MCPMessage{Server: server, Session: n, Direction: tapefmt.MCPStart, Message: msg}); err != nil {
		return mcpOpened{}, err
	}
	o := mcpOpened{session: n}
	parent, fork := c.readTape()
	if parent == nil {
		return o, nil
	}
	msgs, used, err := recordedSession(parent, server, n, order)
	switch {
	case err != nil && !fork:
		return o, err
	case err != nil: // a fork runs a server the parent did not have live
		return o, nil
	}
	c.mcp.mu.Lock()
	if c.mcp.served == nil {
		c.mcp.served = map[mcpKey]bool{}
	}
	c.mcp.served[used] = true
	c.mcp.mu.Unlock()
	o.replay, o.liveLater, o.messages = true, fork, msgs
	return o, nil
}

// readTape is the tape a replay or a fork reads its answers from, and
// whether it is a fork (whose calls go live from the fork point on).
func (c *control) readTape() (t *tapefmt.Tape, fork bool) {
	switch b := c.p.backend.(type) {
	case *tapeBackend:
		return b.tape, false
	case *forkBackend:
		return b.tape, true
	}
	return nil, false
}

// MCPLive says whether an MCP session of this run goes to its live
// server now. A recording always does and a replay never; a fork does
// from its fork point on, or once it diverged.
func (c *control) MCPLive(context.Context) (controlapi.Live, error) {
	return controlapi.Live{Live: c.live()}, nil
}

// live reports whether MCP sessions go to their live servers now.
func (c *control) live() bool {
	switch b := c.p.backend.(type) {
	case *tapeBackend:
		return false
	case *forkBackend:
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.forked || b.diverged
	}
	return true
}

// MCPMessage records one message of a session (recordMCP).
func (c *control) MCPMessage(_ context.Context, m controlapi.MCPMessage) (controlapi.Frame, error) {
	if m.Dir != tapefmt.MCPToServer && m.Dir != tapefmt.MCPFromServer {
		return controlapi.Frame{}, controlapi.BadRequest("mcp message: dir is to_server or from_server")
	}
	seq, err := c.recordMCP(m)
	return controlapi.Frame{Frame: seq}, err
}

// MCPOutbox holds a tools/call until the booth commits (hold): the
// idempotency key it will run with. Only a booth run, or an SDK
// transaction that stages MCP calls, has an outbox (409 unavailable
// otherwise); a call the user's policy does not hold is refused (403
// refused, why).
func (c *control) MCPOutbox(_ context.Context, req controlapi.MCPOutbox) (controlapi.OutboxKey, error) {
	key, err := c.hold(mcpKey{req.Server, req.Session}, req.Tool, req.Arguments, req.Approve)
	switch {
	case errors.Is(err, mcp.ErrNotHeld):
		return controlapi.OutboxKey{}, &controlapi.Error{Status: http.StatusForbidden, Type: controlapi.TypeRefused,
			Message: "jukebox: mcp outbox: " + err.Error(), Err: err}
	case errors.Is(err, errNoOutbox):
		return controlapi.OutboxKey{}, controlapi.Fail(http.StatusConflict, controlapi.TypeUnavailable, err)
	case errors.Is(err, errNotHoldable):
		return controlapi.OutboxKey{}, controlapi.BadRequest("mcp outbox: an open session and a tool, please")
	}
	return controlapi.OutboxKey{Key: key}, err
}

// errReadOnly refuses a call the policy holds as a write while the agent's
// latest open transaction is read_only: the call is refused (it is
// mcp.ErrNotHeld), neither held nor run.
type errReadOnly struct{}

func (errReadOnly) Error() string {
	return "the agent's open transaction is read_only (mcp_mode): a tool call the policy holds as a write is refused"
}

func (errReadOnly) Is(target error) bool { return target == mcp.ErrNotHeld }

// Why a call cannot be held for the outbox.
var (
	errNoOutbox    = errors.New("the outbox runs when a booth commits, or an SDK transaction that stages MCP calls: this run is not in the booth and has no such transaction open")
	errNotHoldable = errors.New("not an open session and a tool")
)

// hold puts a tools/call of session k in the outbox, on the tape first,
// and returns the idempotency key it will run with. Only a booth run has
// an outbox (errNoOutbox otherwise), and it holds only what the user's
// policy holds, for the server it names (mcp.ErrNotHeld otherwise):
// approve is the policy's, or the asker's when stricter.
func (c *control) hold(k mcpKey, tool string, args json.RawMessage, approve bool) (string, error) {
	c.mcp.mu.Lock()
	argv, known := c.mcp.argv[k]
	on, own, policy := c.mcp.outboxOn, c.mcp.own[k], c.mcp.policy
	c.mcp.held++
	n := c.mcp.held
	c.mcp.mu.Unlock()
	st, mode := c.txs.stagedMCP() // outside the booth: the agent's own transaction, if one is open
	switch {
	case mode == "read_only":
		return "", errReadOnly{}
	case !on && st == nil:
		return "", errNoOutbox
	case !known || tool == "":
		return "", errNotHoldable
	}
	if on {
		ask, err := policy.HostCall(k.server, tool, argv, own)
		if err != nil {
			return "", err
		}
		approve = approve || ask
	}
	key := fmt.Sprintf("jukebox-%s-%d", c.tapeID(), n)
	e := outboxEntry{k, mcp.Call{Tool: tool, Args: args, Key: key}, approve}
	msg, _ := json.Marshal(e.Call)
	if _, err := c.append(tapefmt.MCPMessage{Server: k.server, Session: k.session, Direction: tapefmt.MCPOutbox, Message: msg}); err != nil {
		return "", err
	}
	if !on {
		c.txs.mu.Lock()
		st.held = append(st.held, HeldCall{Server: k.server, Session: k.session, Argv: argv, Call: e.Call, Approve: approve})
		c.txs.mu.Unlock()
		return key, nil
	}
	c.mcp.mu.Lock()
	c.mcp.outbox = append(c.mcp.outbox, e)
	c.mcp.mu.Unlock()
	return key, nil
}

// tapeID is the tape's id in hex, or "run" without a tape.
func (c *control) tapeID() string {
	if c.p.tape == nil {
		return "run"
	}
	id := c.p.tape.ID()
	return hex.EncodeToString(id[:6])
}

// recordMCP writes an mcp.message frame: the line as its JSON, or in a
// blob when it is not JSON; a tools/call linked to the model's call.
func (c *control) recordMCP(m mcp.Wire) (uint64, error) {
	c.mcp.mu.Lock()
	c.mcp.messages++
	if m.Problem == mcp.NotRecorded {
		c.mcp.missing++
	}
	c.mcp.mu.Unlock()
	f := tapefmt.MCPMessage{Server: m.Server, Session: m.Session, Direction: m.Dir, Problem: m.Problem, Size: m.Size}
	if json.Valid([]byte(m.Message)) {
		f.Message = json.RawMessage(m.Message)
		if m.Dir == tapefmt.MCPToServer {
			f.Call = c.mcp.link(f.Message)
		}
	} else if c.p.tape != nil {
		var err error
		if f.Body, err = c.p.tape.PutBlob("mcp "+m.Server, []byte(m.Message)); err != nil {
			return 0, err
		}
	}
	return c.append(f)
}

// recordedSession is the n-th recorded session of server on the tape, or,
// when the tape has no session of that name, the session started in the
// order-th place: its messages, in order.
func recordedSession(t *tapefmt.Tape, server string, n, order int) ([]mcp.Wire, mcpKey, error) {
	type key = mcpKey
	var starts []key
	byKey := map[key][]mcp.Wire{}
	named := false
	for m, err := range mcpFrames(t) {
		if err != nil {
			return nil, key{}, err
		}
		k := key{m.Server, m.Session}
		named = named || m.Server == server
		if m.Direction == tapefmt.MCPStart {
			starts = append(starts, k)
			continue
		}
		raw := []byte(m.Message)
		if !m.Body.IsZero() {
			var err error
			if raw, err = t.Blob(m.Body); err != nil {
				return nil, key{}, err
			}
		}
		byKey[k] = append(byKey[k], mcp.Wire{Server: m.Server, Session: m.Session, Dir: m.Direction, Message: string(raw), Problem: m.Problem})
	}
	want := key{server, n}
	if !named {
		if order > len(starts) {
			return nil, key{}, noSession(server, n)
		}
		want = starts[order-1]
	}
	msgs, ok := byKey[want]
	if !ok && !slices.Contains(starts, want) {
		return nil, key{}, noSession(server, n)
	}
	return msgs, want, nil
}

// mcpFrames are the tape's mcp.message frames, decoded.
func mcpFrames(t *tapefmt.Tape) iter.Seq2[*tapefmt.MCPMessage, error] {
	return func(yield func(*tapefmt.MCPMessage, error) bool) {
		for f, err := range t.Frames(tapefmt.KindMCP) {
			var p tapefmt.Payload
			if err == nil {
				p, err = f.Decode()
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if m, ok := p.(*tapefmt.MCPMessage); ok && !yield(m, nil) {
				return
			}
		}
	}
}

func noSession(server string, n int) error { return &noSessionError{server, n} }

// noSessionError: a replay's tape holds no such MCP session.
type noSessionError struct {
	server string
	n      int
}

func (e *noSessionError) Error() string {
	return fmt.Sprintf("the tape holds no session %d of MCP server %q to replay (jukebox fork runs MCP servers live; or record it again)", e.n, e.server)
}
