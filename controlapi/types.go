package controlapi

import (
	"encoding/base64"
	"encoding/json"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/mcp"
)

// The run: info, marker, turn, breaker, end.

// Info answers GET /v1/info.
type Info struct {
	API   int    `json:"api"`
	Calls uint64 `json:"calls"`
	// Mode is record, replay or fork.
	Mode      string `json:"mode"`
	Recording bool   `json:"recording"`
	// TapeID is the tape's id in hex, when the run writes one.
	TapeID string `json:"tape_id,omitempty"`
	// Transactions says whether this run serves transactions.
	Transactions bool `json:"transactions"`
}

// Marker is POST /v1/marker's body: a marker frame.
type Marker struct {
	Label string `json:"label"`
	Note  string `json:"note,omitempty"`
}

// Frame answers a request that wrote a frame: its sequence number (0
// when the run writes no tape).
type Frame struct {
	Frame uint64 `json:"frame"`
}

// Turn is POST /v1/turn's body: an agent.turn frame. CostUSD is spending
// jukebox did not see, which the breaker and the bill count as reported.
type Turn struct {
	Agent   string  `json:"agent,omitempty"`
	Turn    int     `json:"turn"`
	Role    string  `json:"role,omitempty"`
	Text    string  `json:"text,omitempty"`
	Model   string  `json:"model,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Track is the SDK's track the turn ran in, as a path of nested
	// tracks ("outer#1/inner#2"): concurrent tracks' turns apart.
	Track string `json:"track,omitempty"`
}

// TurnAnswer answers POST /v1/turn: the frame, and the breaker's trip
// when this turn tripped it.
type TurnAnswer struct {
	Breaker *breaker.Trip `json:"breaker,omitempty"`
	Frame   uint64        `json:"frame"`
}

// BreakerState answers GET /v1/breaker.
type BreakerState struct {
	Breaker *breaker.Trip `json:"breaker,omitempty"`
	Tripped bool          `json:"tripped"`
}

// End is POST /v1/end's body: ends a run jukebox serve records.
type End struct {
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
}

// Ended answers POST /v1/end.
type Ended struct {
	Ended bool `json:"ended"`
}

// MCP sessions: endpoint, mcp/start, mcp/message, mcp/outbox, mcp/live.

// Endpoint is POST /v1/endpoint's body and answer: a loopback host:port
// of jukebox's own, relayed unrecorded by the forward proxy.
type Endpoint struct {
	Addr string `json:"addr"`
}

// MCPStart is POST /v1/mcp/start's body: opens a session of server.
type MCPStart struct {
	Server string   `json:"server"`
	Argv   []string `json:"argv"`
}

// MCPSession answers POST /v1/mcp/start: the session's number and, in a
// replay or a fork, the recorded session to answer from.
type MCPSession struct {
	// LiveLater: a fork, whose server goes live once MCPLive says so.
	LiveLater bool `json:"live_later"`
	// Messages are the recorded session's, in order, for a replay.
	Messages []mcp.Wire `json:"messages"`
	Replay   bool       `json:"replay"`
	Session  int        `json:"session"`
	// Policy is the run's --mcp-policy (mcp.Policy as JSON), for a jukebox
	// mcp that joined the run to apply whatever its own environment holds
	// (an MCP client may pass its server none of the run's variables).
	Policy json.RawMessage `json:"policy,omitempty"`
}

// MCPMessage is POST /v1/mcp/message's body: one line of a session.
type MCPMessage = mcp.Wire

// MCPOutbox is POST /v1/mcp/outbox's body: a tools/call to hold until
// the commit.
type MCPOutbox struct {
	Server    string          `json:"server"`
	Session   int             `json:"session"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Approve   bool            `json:"approve"`
}

// OutboxKey answers POST /v1/mcp/outbox: the idempotency key the held
// call will run with.
type OutboxKey struct {
	Key string `json:"key"`
}

// Live answers GET /v1/mcp/live: whether sessions go to their live
// servers now.
type Live struct {
	Live bool `json:"live"`
}

// Transactions: tx, tx/ID/OP.

// Begin is POST /v1/tx's body (optional).
type Begin struct {
	Name string `json:"name"`
	// MCPMode is staged_acid (the default), read_only or passthrough.
	MCPMode string `json:"mcp_mode"`
}

// Begun answers POST /v1/tx.
type Begun struct {
	Tx        string `json:"tx"`
	Workspace string `json:"workspace"`
}

// Write is POST /v1/tx/ID/write's body: Content is text, or base64 when
// Base64, and required (null or missing is a bad request, never an empty
// file); Mode is 0644 when 0.
type Write struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
	Base64  bool    `json:"base64"`
	Mode    uint32  `json:"mode"`

	data []byte // the content as bytes, when a binary batch carried it so (Data)
}

// Data is the content to write: the bytes a binary batch carried, or
// Content (decoded from base64 when Base64 says so). Content that is
// missing, null or not base64 when it should be is a bad request.
func (w Write) Data() ([]byte, error) {
	switch {
	case w.data != nil:
		return w.data, nil
	case w.Content == nil:
		return nil, BadRequest("write %s: content is missing or null (stage a delete to remove a file, \"\" to empty it)", w.Path)
	case w.Base64:
		data, err := base64.StdEncoding.DecodeString(*w.Content)
		if err != nil {
			return nil, BadRequest("content: %v", err)
		}
		return data, nil
	}
	return []byte(*w.Content), nil
}

// Written answers POST /v1/tx/ID/write.
type Written struct {
	Path string `json:"path"`
	Size int    `json:"size"`
}

// PathOf is the body of POST /v1/tx/ID/delete and stage-path, and the
// answer of delete.
type PathOf struct {
	Path string `json:"path"`
}

// Staged answers POST /v1/tx/ID/stage-path: the staged copy's path.
type Staged struct {
	Path   string `json:"path"`
	Staged string `json:"staged"`
}

// SQL is POST /v1/tx/ID/sql's body.
type SQL struct {
	DSN    string            `json:"dsn"`
	SQL    string            `json:"sql"`
	Params []json.RawMessage `json:"params"`
}

// Rows answers POST /v1/tx/ID/sql; Columns and Rows are never null.
type Rows struct {
	Columns []string `json:"columns"`
	// Types are the columns' PostgreSQL type names (int4, numeric, _date
	// for an array of dates), by which a client turns the values below
	// into its own types: a bytea is base64, a numeric, date, time,
	// timestamp, uuid, interval or a type JSON has no form for is text
	// (ISO 8601 for dates and times). Absent from answers before it.
	Types    []string `json:"types,omitempty"`
	Rows     [][]any  `json:"rows"`
	RowCount int64    `json:"rowcount"`
}

// Shell is POST /v1/tx/ID/shell's body.
type Shell struct {
	Command string `json:"command"`
}

// ShellResult answers POST /v1/tx/ID/shell.
type ShellResult struct {
	ExitCode int    `json:"exit_code"`
	Stderr   string `json:"stderr"`
	Stdout   string `json:"stdout"`
}

// Committed answers POST /v1/tx/ID/commit: Changes are the files
// changed, Statements the SQL statements committed; MCPCalls are the
// held MCP calls run after the commit, when it held any.
type Committed struct {
	Changes    int            `json:"changes"`
	Statements int            `json:"statements"`
	Committed  bool           `json:"committed"`
	MCPCalls   []OutboxResult `json:"mcp_calls,omitempty"`
	Tx         string         `json:"tx"`
}

// OutboxResult is what came of a held MCP call at a commit.
type OutboxResult struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Key    string `json:"key"`
	Ran    bool   `json:"ran"` // run after the commit (else dropped, or kept)
	// Kept: kept with the transaction, for jukebox booth commit.
	Kept  bool   `json:"kept,omitempty"`
	Error string `json:"error,omitempty"` // the server's error, or why it could not run
	// Approve: the policy lets it run only when a person approved the
	// commit (--commit ask, answered yes).
	Approve bool            `json:"approve,omitempty"`
	Args    json.RawMessage `json:"arguments,omitempty"`
	Argv    []string        `json:"argv,omitempty"` // the server's command line, which runs it outside the booth
}

// Rollback is POST /v1/tx/ID/rollback's body (optional).
type Rollback struct {
	Reason string `json:"reason"`
}

// RolledBack answers POST /v1/tx/ID/rollback.
type RolledBack struct {
	RolledBack bool   `json:"rolled_back"`
	Tx         string `json:"tx"`
}

// Batch is POST /v1/tx/ID/batch's body: operations of the transaction
// sent together (the Python SDK sends its staged writes and deletes so,
// with the commit or rollback that ends them, or before any other
// operation). Each is served as its own request would be, and taped so:
// a tape holds the same frames whether its operations came one by one or
// in batches.
type Batch struct {
	Ops []BatchOp `json:"ops"`
}

// BatchOp is one operation of a Batch: its name (BatchOps) and the body
// its own request takes.
type BatchOp struct {
	Op   string          `json:"op"`
	Body json.RawMessage `json:"body,omitempty"`
	// Base is, for a write or a delete, the real file as the client saw it
	// when it staged the operation: one that differs when the batch comes
	// changed on the real side since, a conflict (BaseOf).
	Base *FileBase `json:"base,omitempty"`

	decoded any       // Body decoded, when the batch did it (a binary batch's write)
	compact bool      // Body is compact JSON
	lazy    *lazyBody // Body, when the batch builds it only if asked (body)
	refused *Error    // the answer, when the batch refused the operation as it came (a write too large to tape)
}

// FileBase is a real file as a client saw it: whether it existed, and its
// size and modification time (nanoseconds since the epoch).
type FileBase struct {
	Exists  bool  `json:"exists"`
	Size    int64 `json:"size"`
	MtimeNs int64 `json:"mtime_ns"`
}

// Batched answers a Batch: the answer of each operation served, in order,
// with its status; the first that fails is the last one served.
type Batched struct {
	Answers []BatchAnswer `json:"answers"`
}

// BatchAnswer is one operation's answer as its own request would have
// had it.
type BatchAnswer struct {
	Status int             `json:"status"`
	Body   json.RawMessage `json:"body"`
}
