package tapefmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"
)

// Payload is the decoded body of a frame. Each kind has one payload type; its
// schema version is in the frame header so that fields can be added later.
// Payloads are stored as JSON objects; large bytes go into blobs and are
// referenced by Hash.
type Payload interface {
	Kind() Kind
}

// schemaVersion is the payload schema version written for every known kind.
// When a kind's payload changes incompatibly, give it its own number here.
func schemaVersion(k Kind) uint8 {
	if k.Known() {
		return 1
	}
	return 0
}

// ParentRef names the frame of another tape that this run was forked from.
type ParentRef struct {
	Tape  string `json:"tape"`           // chain head of the parent, hex
	Frame uint64 `json:"frame"`          // sequence number of the fork frame in the parent
	Call  uint64 `json:"call"`           // the model call, counted from 0, that got the overrides
	Path  string `json:"path,omitempty"` // where the parent was when forked; a hint only
	// Overrides are the changes applied at the fork frame, as given.
	Overrides json.RawMessage `json:"overrides,omitempty"`
	// Packed says the parent's frames before the fork frame are on this
	// tape (jukebox pack), so it needs no other file.
	Packed bool `json:"packed,omitempty"`
}

// RunStart opens a run: what was started, where and how.
type RunStart struct {
	Name     string            `json:"name,omitempty"`
	Argv     []string          `json:"argv"`
	Cwd      string            `json:"cwd"`
	Env      map[string]string `json:"env,omitempty"` // allow-listed; secrets dropped by the writer
	Seed     int64             `json:"seed"`
	Host     string            `json:"host,omitempty"`
	Version  string            `json:"jukebox_version"`
	Mode     RunMode           `json:"mode,omitempty"`
	Started  string            `json:"started"` // wall clock, RFC 3339 with nanoseconds
	Parent   *ParentRef        `json:"parent,omitempty"`
	Upstream map[string]string `json:"upstreams,omitempty"` // provider name to base URL
	// Redact are the patterns whose matches were masked on this tape
	// (Masker), never what they matched.
	Redact []string `json:"redact,omitempty"`
	// Match are the matching rules the run was recorded with (record's
	// --ignore, --scrub, --match-config): every replay and fork of the
	// tape uses them.
	Match *MatchRules `json:"match,omitempty"`
	// IgnoreOutput are the patterns (Go RE2) record's --ignore-output
	// gave: every replay of the tape replaces their matches in each line
	// of stdout before it compares the outputs.
	IgnoreOutput []string `json:"ignore_output,omitempty"`
	// RecordMode is record's --record-mode that wrote the tape (once, new,
	// all), when one was given.
	RecordMode string `json:"record_mode,omitempty"`
	// Tags are the run's KEY=VALUE labels (record --tag, JUKEBOX_TAGS; a
	// fork keeps its parent's and adds its own).
	Tags map[string]string `json:"tags,omitempty"`
	// User is who ran it (the account's name), and Git where the working
	// folder's repository stood, when it is in one.
	User string  `json:"user,omitempty"`
	Git  *GitRef `json:"git,omitempty"`
	// External says jukebox did not start the process it recorded (jukebox
	// serve, which the Python SDK runs on its own; a Go program recording
	// itself): its output is not on the tape, and run.end has the exit it
	// reported.
	External bool `json:"external,omitempty"`
	// ShownTapeID is the tape id (hex) the agent was told it was recorded
	// on (the control API's info), when it is not this tape's own: a
	// replay's, that of the recording it replayed, so that a replay of
	// the replay tells the agent the same.
	ShownTapeID string `json:"shown_tape_id,omitempty"`
}

// GitRef is the commit and branch a run's working folder was on.
type GitRef struct {
	Commit string `json:"commit,omitempty"` // hex; "" on a branch with no commit yet
	Branch string `json:"branch,omitempty"` // "" when HEAD was detached
}

// MatchRules are matching rules as a tape keeps them (package reqmatch
// gives them meaning): request fields left out by path, and patterns
// scrubbed on both sides before comparing.
type MatchRules struct {
	Ignore []string     `json:"ignore,omitempty"`
	Scrub  []MatchScrub `json:"scrub,omitempty"`
}

// MatchScrub is one scrub rule: a Go RE2 pattern and its replacement.
type MatchScrub struct {
	Pattern string `json:"pattern"`
	With    string `json:"with"`
}

// RunEnd closes a run with the child's exit status.
type RunEnd struct {
	ExitCode int       `json:"exit_code"`
	Signal   string    `json:"signal,omitempty"`
	Error    string    `json:"error,omitempty"`
	Reason   EndReason `json:"reason,omitempty"`
	// Stopped is the stop signal jukebox received and passed on to the
	// agent ("SIGTERM", "SIGHUP"; SIGINT also makes Reason interrupted): a
	// replay stops its agent with it at the call the stop cut.
	Stopped string `json:"stopped,omitempty"`
	// ExportLost counts the spans a live OpenTelemetry export of the run
	// lost (its queue full, the receiver down, slow or refusing), and
	// ExportError is its first error; both are left out when the run was
	// not exported live or lost nothing.
	ExportLost  int64  `json:"export_lost,omitempty"`
	ExportError string `json:"export_error,omitempty"`
}

// Step marks the end of one whole agent step; Chain is the hash chain's value
// over every frame before this one (see FORMAT.md), so a reader can check
// the chain so far.
type Step struct {
	Step  uint64 `json:"step"`
	Chain Hash   `json:"chain"`
}

// Usage is the token count of one LLM call as the provider reported it.
type Usage struct {
	Input     int64 `json:"input,omitempty"`
	Output    int64 `json:"output,omitempty"`
	Cached    int64 `json:"cached,omitempty"`
	Reasoning int64 `json:"reasoning,omitempty"`
	// CacheWrite are input tokens written to the provider's prompt cache
	// (Anthropic's cache_creation_input_tokens), which it bills apart.
	CacheWrite int64 `json:"cache_write,omitempty"`
}

// Total is input plus output tokens.
func (u Usage) Total() int64 { return u.Input + u.Output }

// Plus is u and o added up, count by count.
func (u Usage) Plus(o Usage) Usage {
	return Usage{Input: u.Input + o.Input, Output: u.Output + o.Output, Cached: u.Cached + o.Cached,
		Reasoning: u.Reasoning + o.Reasoning, CacheWrite: u.CacheWrite + o.CacheWrite}
}

// LLMRequest is one HTTP request an agent sent to a model provider.
type LLMRequest struct {
	Call     uint64      `json:"call"`     // pairs the request with its response
	Provider string      `json:"provider"` // openai, anthropic, ...
	Method   string      `json:"method"`
	Path     string      `json:"path"`            // request path, e.g. /v1/chat/completions
	Query    string      `json:"query,omitempty"` // raw query, secrets dropped
	Header   http.Header `json:"header,omitempty"`
	Body     Hash        `json:"body,omitzero"`
	Size     int64       `json:"size"`
	Model    string      `json:"model,omitempty"`
	Stream   bool        `json:"stream,omitempty"`
	// Conn and ConnSeq place the request on the agent's connections to
	// jukebox: the connection's ordinal in the run and the request's on
	// it, both from 1 (0: not recorded). Replay uses them to give parallel
	// identical requests the answers they got.
	Conn    uint64 `json:"conn,omitempty"`
	ConnSeq uint64 `json:"conn_seq,omitempty"`
	// Scheme and Host are the origin the agent asked for when the call
	// came through jukebox's forward proxy (the proxy variables, a CONNECT
	// tunnel) rather than a provider base URL pointed at jukebox; empty
	// then. Host is host[:port] as the agent wrote it.
	Scheme string `json:"scheme,omitempty"`
	Host   string `json:"host,omitempty"`
}

// Chunk is one piece of a streamed response as it arrived: the body bytes up
// to End (exclusive) had arrived At nanoseconds after the request was sent.
type Chunk struct {
	End int64
	At  int64
}

// Chunks encode to JSON as one flat array of deltas, [size0, gap0, size1,
// gap1, ...]: each chunk's size in bytes and the microseconds since the
// previous chunk (since the request for the first). A streamed response
// has hundreds of chunks; keys and absolute nanoseconds would triple their
// size. Times are kept to the microsecond.
type Chunks []Chunk

// MarshalJSON writes the flat delta array.
func (c Chunks) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+len(c)*10)
	b = append(b, '[')
	var end, at int64
	for i, ch := range c {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, ch.End-end, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, ch.At/1000-at, 10)
		end, at = ch.End, ch.At/1000
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads the flat delta array. Every response frame carries
// one, so the common form (integers and commas) is read by hand; anything
// else goes through encoding/json.
func (c *Chunks) UnmarshalJSON(data []byte) error {
	flat, ok := parseInts(data)
	if !ok {
		if err := json.Unmarshal(data, &flat); err != nil {
			return err
		}
	}
	if len(flat)%2 != 0 {
		return fmt.Errorf("chunks: odd number of values (%d)", len(flat))
	}
	*c = make(Chunks, len(flat)/2)
	var end, at int64
	for i := range *c {
		end, at = end+flat[2*i], at+flat[2*i+1]
		(*c)[i] = Chunk{End: end, At: at * 1000}
	}
	return nil
}

// LLMResponse is the provider's answer to one LLMRequest, byte for byte.
type LLMResponse struct {
	Call    uint64      `json:"call"`
	Status  int         `json:"status"`
	Header  http.Header `json:"header,omitempty"`
	Body    Hash        `json:"body,omitzero"`
	Size    int64       `json:"size"`
	Chunks  Chunks      `json:"chunks,omitempty"` // set for streamed bodies
	Model   string      `json:"model,omitempty"`
	Usage   Usage       `json:"usage,omitzero"`
	Latency int64       `json:"latency_ns"`      // time to the response head
	Elapsed int64       `json:"elapsed_ns"`      // time to the last byte
	Error   string      `json:"error,omitempty"` // a reset, timeout or refused connection
	// Encoding is the Content-Encoding the body was stored with (e.g.
	// "gzip"): the body blob holds the compressed bytes as received, and
	// Model and Usage were read from the decoded body. Empty when the body
	// was not compressed; tapes older than this field leave it out, and
	// readers go by Header then.
	Encoding string `json:"encoding,omitempty"`
	// Undecodable says why a compressed body could not be decoded when it
	// was recorded (corrupt, an unknown coding, over the decoding cap).
	Undecodable string `json:"undecodable,omitempty"`
	// Rate is the price the call was priced at when recorded live (the
	// price table in force, a --prices file, --unknown-model-rate); views
	// price the call by it. Tapes older than this field leave it out and
	// are priced by the table of the reader.
	Rate *Rate `json:"rate,omitempty"`
}

// ToolCall is a tool invocation, from an LLM response, an MCP client or the booth.
type ToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args,omitempty"`
	Source ToolSource      `json:"source,omitempty"`
	Server string          `json:"server,omitempty"`
}

// ToolResult is what a tool call returned.
type ToolResult struct {
	ID      string          `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Body    Hash            `json:"body,omitzero"` // large results
	IsError bool            `json:"is_error,omitempty"`
	Elapsed int64           `json:"elapsed_ns,omitempty"`
}

// MCPMessage is one JSON-RPC message between an agent and an MCP server.
type MCPMessage struct {
	Server string `json:"server"`
	// Session tells apart the runs of one server in a tape (jukebox mcp
	// started again), from 1; 0 in tapes written before sessions.
	Session   int             `json:"session,omitempty"`
	Direction MCPDirection    `json:"dir"`
	Message   json.RawMessage `json:"message,omitempty"`
	Body      Hash            `json:"body,omitzero"` // large messages, and lines that are not JSON
	// Problem says what was wrong with the line (not JSON, over the size
	// limit and cut to it, answered by jukebox for a dead server); Size is
	// its length as it went.
	Problem string `json:"problem,omitempty"`
	Size    int    `json:"size,omitempty"`
	// Call links a tools/call request to the model's tool call that asked
	// for it: the llm.response frame and the call's id there.
	Call *ToolLink `json:"call,omitempty"`
}

// ToolLink names a model's tool call: its llm.response frame and id.
type ToolLink struct {
	Frame uint64 `json:"frame"`
	ID    string `json:"id,omitempty"`
}

// FileChange is one change to the workspace, staged or applied.
type FileChange struct {
	Tx string `json:"tx,omitempty"`
	// Root is the folder outside the workspace Path is relative to, for a
	// change of a staged folder (record --allow-write); "" is the
	// workspace.
	Root   string `json:"root,omitempty"`
	Op     FileOp `json:"op"`
	Path   string `json:"path"`
	Mode   uint32 `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Body   Hash   `json:"body,omitzero"`
	Before Hash   `json:"before,omitzero"`
	Target string `json:"target,omitempty"` // symlink target
	// Refused and Reason are set for op refused: an entry of a change set
	// that the booth could not commit, and why.
	Refused RefusalKind `json:"refused,omitempty"`
	Reason  string      `json:"reason,omitempty"`
	// MtimeNs, Xattrs and Link are what a plain run leaves besides
	// content and mode: the modification time (Unix nanoseconds), the
	// user.* extended attributes (all of them; an empty map removes
	// every one, a missing one keeps them), and, for another name of a
	// file written in the same change set, that file's path.
	MtimeNs int64            `json:"mtime_ns,omitempty"`
	Xattrs  map[string]Bytes `json:"xattrs,omitzero"`
	Link    string           `json:"link,omitempty"`
	// Step, when set, makes this frame a step record rather than a
	// member of the committed change set: the workspace's state of Path
	// (against the run's start) at step boundary Step, from 1, read
	// before the model call that follows it, or when the agent ended.
	// A step record is written only when the path changed since the
	// boundary before; op restore says it is back as it was at the start.
	Step int `json:"step,omitempty"`
}

// IsStep reports whether f is a step record (FileChange.Step), not part
// of the committed change set.
func (f *FileChange) IsStep() bool { return f.Step > 0 }

// Snapshot is the workspace as it was when a booth run began (record
// --booth --snapshot): every path in it, in path order, each file's
// content a blob. A large workspace takes several frames, Part from 1 of
// Parts, written one after the other.
type Snapshot struct {
	Tx        string          `json:"tx,omitempty"`
	Workspace string          `json:"workspace"`
	Part      int             `json:"part"`
	Parts     int             `json:"parts"`
	Files     []SnapshotEntry `json:"files"`
}

// SnapshotEntry is one path of a Snapshot's listing.
type SnapshotEntry struct {
	Path   string `json:"path"`
	Type   string `json:"type"` // "file", "dir" or "symlink"
	Mode   uint32 `json:"mode,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Body   Hash   `json:"body,omitzero"`
	Target string `json:"target,omitempty"`
}

// Where is the changed path as a reader should see it: relative to the
// workspace, or, for a staged folder outside it, its absolute path.
func (f *FileChange) Where() string {
	if f.Root == "" {
		return f.Path
	}
	return path.Join(f.Root, f.Path)
}

// Output is bytes the child wrote to its stdout (Fd 1) or stderr (Fd 2).
type Output struct {
	Fd   int   `json:"fd"`
	Data Bytes `json:"data"`
}

// Clock is a wall-clock reading handed to the agent.
type Clock struct {
	Unix   int64  `json:"unix_ns"`
	Source string `json:"source,omitempty"`
}

// Seed is a random seed handed to the agent.
type Seed struct {
	Seed   int64  `json:"seed"`
	Source string `json:"source,omitempty"`
}

// TxBegin opens a booth transaction.
type TxBegin struct {
	Tx        string      `json:"tx"`
	Workspace string      `json:"workspace,omitempty"`
	Mode      StagingMode `json:"mode,omitempty"` // the staging mode asked for
	// Confined says whether the agent runs confined (auto and overlay run
	// it confined or not at all; copy and reflink do not confine). Nil on
	// tapes written before it was recorded, and for sdk transactions.
	Confined *bool `json:"confined,omitempty"`
}

// TxCommit records a committed booth transaction.
type TxCommit struct {
	Tx      string `json:"tx"`
	Changes int    `json:"changes"`
	// SQL is the agent's database work committed with the files
	// (record --pg), one entry per session.
	SQL []SQLSession `json:"sql,omitempty"`
}

// TxRollback records a rolled-back booth transaction.
type TxRollback struct {
	Tx     string `json:"tx"`
	Reason string `json:"reason,omitempty"`
	// SQL is the agent's database work rolled back with the files.
	SQL []SQLSession `json:"sql,omitempty"`
}

// SQLSession is one PostgreSQL session of an agent in the booth (record
// --pg): the statements whose effect it holds for the decision, and the
// tables it wrote.
type SQLSession struct {
	Session    int            `json:"session"`
	Statements []SQLStatement `json:"statements,omitempty"`
	Tables     []string       `json:"tables,omitempty"`
	// Sensitive says why the session as a whole deserves a second look:
	// the server's locks show it dropped, truncated or altered a table
	// no listed statement names (in a function, a trigger, a DO block).
	Sensitive []string `json:"sensitive,omitempty"`
}

// SQLCount counts the statements of sessions (each once however often it
// ran), and the statements and sessions marked sensitive.
func SQLCount(sessions []SQLSession) (statements, sensitive int) {
	for _, s := range sessions {
		statements += len(s.Statements)
		if len(s.Sensitive) > 0 {
			sensitive++
		}
		for _, st := range s.Statements {
			if len(st.Sensitive) > 0 {
				sensitive++
			}
		}
	}
	return statements, sensitive
}

// SQLStatement is a statement a session ran and kept.
type SQLStatement struct {
	SQL   string `json:"sql"`
	Tag   string `json:"tag,omitempty"`   // the server's command tag, "INSERT 0 1"
	Count int    `json:"count,omitempty"` // times run in a row, when more than once
	// Sensitive says why it deserves a second look before it is
	// committed (it drops, truncates or alters, or changes every row).
	Sensitive []string `json:"sensitive,omitempty"`
}

// BreakerTrip records the circuit breaker stopping a run.
type BreakerTrip struct {
	Rule   string  `json:"rule"`
	Reason string  `json:"reason"`
	Cost   float64 `json:"cost,omitempty"`
	Tokens int64   `json:"tokens,omitempty"`
	// Evidence are the frames that show it: the repeated calls and their
	// results, the answers that said the same thing, the call that would
	// have passed the cap.
	Evidence []uint64 `json:"evidence,omitempty"`
	// Agent is the agent whose own limits tripped: its calls alone were
	// refused, the run went on (unless --trip-all). "" for the run's.
	Agent string `json:"agent,omitempty"`
}

// AgentTurn is a turn an agent reports about itself through the control API.
type AgentTurn struct {
	Agent string `json:"agent,omitempty"`
	Turn  int    `json:"turn"`
	Role  string `json:"role,omitempty"`
	Text  string `json:"text,omitempty"`
	// Model and CostUSD are what the agent says the turn used: a cost
	// jukebox did not see (a call that did not go through it), which the
	// circuit breaker and the bill count as reported.
	Model   string  `json:"model,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Track is the SDK track the turn ran in: nested tracks as a path
	// ("outer#1/inner#2"), concurrent ones by their numbers.
	Track string `json:"track,omitempty"`
}

// MaxTurnCost bounds the cost an agent may report for one turn: the
// control API refuses more, and a tape that says more (written by
// something else) counts none of it (Reported): two turns of 1.7e308
// summed to +Inf, which no JSON holds, and ls --json of the whole folder
// failed.
const MaxTurnCost = 1e6

// Reported is the cost the turn reports, 0 when it is not one a turn can
// cost (negative, not a number, over MaxTurnCost).
func (t *AgentTurn) Reported() float64 {
	if t.CostUSD > 0 && t.CostUSD <= MaxTurnCost {
		return t.CostUSD
	}
	return 0
}

// Marker is a label a user or agent put on the timeline.
type Marker struct {
	Label string `json:"label"`
	Note  string `json:"note,omitempty"`
}

// NetRefused is a connection the booth refused an agent running with
// --net none: where it tried to connect and the error it got.
type NetRefused struct {
	Family string `json:"family"` // ipv4 or ipv6
	Addr   string `json:"addr"`   // host:port
	Errno  string `json:"errno"`  // e.g. ENETUNREACH, ECONNREFUSED
	// Host is the name the agent asked the booth's resolver for, whose
	// answer Addr is; empty when it connected to an address it had not
	// resolved there.
	Host string `json:"host,omitempty"`
}

// HTTPRequest is one HTTP request the agent sent to anything that is not
// a model API jukebox recognises (a search or weather tool, a code host,
// a file download): method, URL and body as sent, secrets dropped.
type HTTPRequest struct {
	ID     uint64      `json:"id"`     // pairs the request with its response, from 0 per run
	Scheme string      `json:"scheme"` // http or https
	Host   string      `json:"host"`   // host[:port] as the agent asked for it
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query,omitempty"` // raw query, secrets dropped
	Header http.Header `json:"header,omitempty"`
	Body   Hash        `json:"body,omitzero"`
	Size   int64       `json:"size"`
	Proto  string      `json:"proto,omitempty"` // HTTP/1.1, HTTP/2.0
	// Conn and ConnSeq place the request on the agent's connections, as
	// in LLMRequest.
	Conn    uint64 `json:"conn,omitempty"`
	ConnSeq uint64 `json:"conn_seq,omitempty"`
}

// HTTPResponse is the answer to one HTTPRequest, byte for byte, with the
// timing of its pieces when it was streamed.
type HTTPResponse struct {
	ID       uint64      `json:"id"`
	Status   int         `json:"status"`
	Header   http.Header `json:"header,omitempty"`
	Body     Hash        `json:"body,omitzero"`
	Size     int64       `json:"size"`
	Chunks   Chunks      `json:"chunks,omitempty"`
	Latency  int64       `json:"latency_ns"`
	Elapsed  int64       `json:"elapsed_ns"`
	Error    string      `json:"error,omitempty"`    // a reset, timeout or refused connection
	Encoding string      `json:"encoding,omitempty"` // Content-Encoding the body is stored with
}

// NetConn is a connection that is not request and answer: a WebSocket
// session after its upgrade (Request names the http.request, or the
// llm.request's call with Model set, that upgraded it), or plain TCP the
// booth saw. Up holds the bytes the agent sent, Down those it received,
// each with the timing of its pieces.
type NetConn struct {
	ID         uint64 `json:"id"`
	Proto      string `json:"proto"`          // websocket, tcp
	Host       string `json:"host,omitempty"` // the name the agent asked for, when known
	Addr       string `json:"addr"`           // host:port connected to
	Request    uint64 `json:"request,omitempty"`
	Up         Hash   `json:"up,omitzero"`
	UpSize     int64  `json:"up_size"`
	UpChunks   Chunks `json:"up_chunks,omitempty"`
	Down       Hash   `json:"down,omitzero"`
	DownSize   int64  `json:"down_size"`
	DownChunks Chunks `json:"down_chunks,omitempty"`
	Elapsed    int64  `json:"elapsed_ns"`
	Refused    bool   `json:"refused,omitempty"` // --hermetic refused it; nothing was sent
	Error      string `json:"error,omitempty"`
}

// Control is one exchange of the control API that a replay answers from
// the tape (a turn, a marker, a transaction's begin and operations, its
// commit or rollback, a held MCP call): the request as the agent sent it
// and the answer it got, so a replay and a fork before its fork point
// can match the agent's request (by order, route and body) and give it
// the same answer without doing the work again.
type Control struct {
	Method string `json:"method"`
	Path   string `json:"path"` // under the API's prefix, e.g. /v1/tx/ID/sql
	// Request and Answer are the JSON bodies, compacted; one larger than
	// MaxControlInline is in a blob instead (RequestBody, AnswerBody).
	Request     json.RawMessage `json:"request,omitempty"`
	RequestBody Hash            `json:"request_body,omitzero"`
	Status      int             `json:"status"`
	Answer      json.RawMessage `json:"answer,omitempty"`
	AnswerBody  Hash            `json:"answer_body,omitzero"`
	// File is the content of the staged copy a stage-path answer names,
	// as it was when answered (a SQLite database the agent then changes
	// itself): a replay hands the agent a scratch copy of it.
	File Hash `json:"file,omitzero"`
	// Checked, not on the tape, says that the writer made Request and
	// Answer valid JSON itself (compacted them, or built them so): they
	// are not checked again as they are written.
	Checked bool `json:"-"`
}

// MaxControlInline is the largest body a control frame holds in its
// payload; a larger one goes in a blob.
const MaxControlInline = 64 << 10

// parseInts reads a JSON array of plain decimal integers with no spaces,
// as MarshalJSON writes it; ok is false for any other form.
func parseInts(data []byte) (out []int64, ok bool) {
	if len(data) < 2 || data[0] != '[' || data[len(data)-1] != ']' {
		return nil, false
	}
	body := data[1 : len(data)-1]
	if len(body) == 0 {
		return []int64{}, true
	}
	out = make([]int64, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		end := bytes.IndexByte(body, ',')
		if end < 0 {
			end = len(body)
		}
		n, ok := atoi(body[:end])
		if !ok {
			return nil, false
		}
		out = append(out, n)
		if end == len(body) {
			break
		}
		body = body[end+1:]
		if len(body) == 0 {
			return nil, false // a trailing comma
		}
	}
	return out, true
}

// atoi reads an optionally negative decimal integer of at most 18 digits
// (enough for any chunk size or gap), with nothing around it.
func atoi(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// ForkCall is the model call, counted from 0, at which the run of a fork
// went live (its parent's calls before it were answered from the
// parent's tape); false for a run that is no fork.
func (r *RunStart) ForkCall() (uint64, bool) {
	if r == nil || r.Parent == nil || r.Mode != ModeFork {
		return 0, false
	}
	return r.Parent.Call, true
}

// Unknown is the payload of a kind this version does not know.
type Unknown struct {
	K    Kind
	JSON json.RawMessage
}

// Kind methods tie each payload type to its frame kind.
func (RunStart) Kind() Kind     { return KindRunStart }
func (RunEnd) Kind() Kind       { return KindRunEnd }
func (Step) Kind() Kind         { return KindStep }
func (LLMRequest) Kind() Kind   { return KindLLMRequest }
func (LLMResponse) Kind() Kind  { return KindLLMResponse }
func (ToolCall) Kind() Kind     { return KindToolCall }
func (ToolResult) Kind() Kind   { return KindToolResult }
func (MCPMessage) Kind() Kind   { return KindMCP }
func (FileChange) Kind() Kind   { return KindFileChange }
func (Output) Kind() Kind       { return KindOutput }
func (Clock) Kind() Kind        { return KindClock }
func (Seed) Kind() Kind         { return KindSeed }
func (TxBegin) Kind() Kind      { return KindTxBegin }
func (TxCommit) Kind() Kind     { return KindTxCommit }
func (TxRollback) Kind() Kind   { return KindTxRollback }
func (BreakerTrip) Kind() Kind  { return KindBreakerTrip }
func (AgentTurn) Kind() Kind    { return KindAgentTurn }
func (Marker) Kind() Kind       { return KindMarker }
func (NetRefused) Kind() Kind   { return KindNetRefused }
func (HTTPRequest) Kind() Kind  { return KindHTTPRequest }
func (HTTPResponse) Kind() Kind { return KindHTTPResponse }
func (NetConn) Kind() Kind      { return KindNetConn }
func (Control) Kind() Kind      { return KindControl }
func (Snapshot) Kind() Kind     { return KindSnapshot }
func (u Unknown) Kind() Kind    { return u.K }

// payloadTypes makes the zero payload of each known kind, as a pointer.
var payloadTypes = map[Kind]func() Payload{
	KindRunStart:     func() Payload { return &RunStart{} },
	KindRunEnd:       func() Payload { return &RunEnd{} },
	KindStep:         func() Payload { return &Step{} },
	KindLLMRequest:   func() Payload { return &LLMRequest{} },
	KindLLMResponse:  func() Payload { return &LLMResponse{} },
	KindToolCall:     func() Payload { return &ToolCall{} },
	KindToolResult:   func() Payload { return &ToolResult{} },
	KindMCP:          func() Payload { return &MCPMessage{} },
	KindFileChange:   func() Payload { return &FileChange{} },
	KindOutput:       func() Payload { return &Output{} },
	KindClock:        func() Payload { return &Clock{} },
	KindSeed:         func() Payload { return &Seed{} },
	KindTxBegin:      func() Payload { return &TxBegin{} },
	KindTxCommit:     func() Payload { return &TxCommit{} },
	KindTxRollback:   func() Payload { return &TxRollback{} },
	KindBreakerTrip:  func() Payload { return &BreakerTrip{} },
	KindAgentTurn:    func() Payload { return &AgentTurn{} },
	KindMarker:       func() Payload { return &Marker{} },
	KindNetRefused:   func() Payload { return &NetRefused{} },
	KindHTTPRequest:  func() Payload { return &HTTPRequest{} },
	KindHTTPResponse: func() Payload { return &HTTPResponse{} },
	KindNetConn:      func() Payload { return &NetConn{} },
	KindControl:      func() Payload { return &Control{} },
	KindSnapshot:     func() Payload { return &Snapshot{} },
}

// Decode parses the frame's payload into its typed form (a pointer such as
// *LLMRequest). A kind or schema newer than this package decodes to Unknown.
func (f Frame) Decode() (Payload, error) {
	mk, ok := payloadTypes[f.Kind]
	if !ok || f.Schema > schemaVersion(f.Kind) {
		return Unknown{K: f.Kind, JSON: json.RawMessage(f.Payload)}, nil
	}
	if f.Kind == KindOutput {
		if o, ok := plainOutput(f.Payload); ok {
			return o, nil
		}
	}
	p := mk()
	if err := json.Unmarshal(f.Payload, p); err != nil {
		return nil, frameErr(f.Offset, f.Seq, "%s payload: %v", f.Kind, err)
	}
	return p, nil
}

// plainOutput reads an output frame written as json.Marshal writes most:
// {"fd":N,"data":"TEXT"}, TEXT a plainJSONString. An agent that streams
// its answer writes thousands of them, and a replay reads them all to
// compare its output; any other form is left to encoding/json (false).
func plainOutput(b []byte) (*Output, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"fd":`))
	if !ok {
		return nil, false
	}
	n := 0
	for n < len(rest) && n < 9 && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || n > 1 && rest[0] == '0' {
		return nil, false
	}
	fd, _ := strconv.Atoi(string(rest[:n]))
	data, ok := bytes.CutPrefix(rest[n:], []byte(`,"data":`))
	if !ok || len(data) < 3 || data[len(data)-1] != '}' || !plainJSONString(data[:len(data)-1]) {
		return nil, false
	}
	return &Output{Fd: fd, Data: Bytes(bytes.Clone(data[1 : len(data)-2]))}, true
}

// marshalPayload encodes p.
func marshalPayload(p Payload) ([]byte, error) {
	if u, ok := p.(Unknown); ok {
		return u.JSON, nil
	}
	var b []byte
	var err error
	if c, ok := p.(Control); ok {
		b, err = c.marshal()
	} else {
		b, err = json.Marshal(p)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", p.Kind(), err)
	}
	return b, nil
}

// marshal is c as JSON, as json.Marshal writes it but for its bodies:
// checked to be JSON and written as they are, last, rather than
// compacted (and HTML-escaped) again byte by byte, which cost a staged
// write of a few kilobytes more than the rest of its frame.
func (c Control) marshal() ([]byte, error) {
	req, ans := c.Request, c.Answer
	c.Request, c.Answer = nil, nil
	head, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	out := head[:len(head)-1] // the closing brace
	for _, f := range []struct {
		key  string
		body json.RawMessage
	}{{"request", req}, {"answer", ans}} {
		if len(f.body) == 0 {
			continue // omitempty
		}
		if !c.Checked && !json.Valid(f.body) {
			return nil, fmt.Errorf("control %s body is not JSON", f.key)
		}
		out = append(append(append(out, `,"`...), f.key...), `":`...)
		out = append(out, f.body...)
	}
	return append(out, '}'), nil
}

// EntryOf is a path as a snapshot lists it, from its file info: its type,
// and its mode as chmod takes it (permissions with setuid 04000, setgid
// 02000 and sticky 01000). ok is false for what a snapshot leaves out
// (fifos, sockets, devices). A symlink's Target and a file's Body are
// the caller's to fill.
func EntryOf(rel string, fi fs.FileInfo) (e SnapshotEntry, ok bool) {
	m := fi.Mode()
	e = SnapshotEntry{Path: rel, Mode: uint32(m.Perm())}
	for bit, u := range map[fs.FileMode]uint32{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if m&bit != 0 {
			e.Mode |= u
		}
	}
	switch {
	case m.IsDir():
		e.Type = "dir"
	case m&fs.ModeSymlink != 0:
		e.Type, e.Mode = "symlink", 0
	case m.IsRegular():
		e.Type, e.Size = "file", fi.Size()
	default:
		return e, false
	}
	return e, true
}
