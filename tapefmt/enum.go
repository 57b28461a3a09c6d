package tapefmt

// The string enumerations a tape stores in frame payloads. Each is a string
// type, so it encodes to JSON exactly as the plain strings of earlier
// versions did; the values are part of the format (FORMAT.md, section 10.3)
// and, like kind numbers, are never renamed: new values may be added.
// Readers should show a value they do not know as it is.

// FileOp is what a file.change frame did to its path (FileChange.Op). The
// Shadow Booth's change sets hold the same values (sandbox.Op is FileOp).
type FileOp string

// File-change operations.
const (
	OpWrite      FileOp = "write"       // a regular file with new content and mode
	OpSymlink    FileOp = "symlink"     // a symlink to Target
	OpMkdir      FileOp = "mkdir"       // a new directory (replacing any non-directory)
	OpReplaceDir FileOp = "replace-dir" // the old directory emptied and made anew
	OpDelete     FileOp = "delete"      // a file, symlink or whole directory removed
	OpChmod      FileOp = "chmod"       // same content, new mode
	OpChmodDir   FileOp = "chmod-dir"   // a directory with a new mode
	// OpRefused is an entry the agent left that the booth cannot commit
	// (FileChange.Refused says what it was, Reason why). It is not applied.
	OpRefused FileOp = "refused"
	// OpRestore, in a step record only (FileChange.Step), says the path
	// is back as it was when the run began.
	OpRestore FileOp = "restore"
)

// RefusalKind is what a refused entry of a change set was
// (FileChange.Refused, with op refused).
type RefusalKind string

// Refusal kinds.
const (
	RefusedFIFO        RefusalKind = "fifo"          // a named pipe
	RefusedSocket      RefusalKind = "socket"        // a unix socket
	RefusedDevice      RefusalKind = "device"        // a character or block device
	RefusedHardLink    RefusalKind = "hard-link"     // a file with more than one name
	RefusedPathTooLong RefusalKind = "path-too-long" // a path over the system's PATH_MAX
	RefusedUnreadable  RefusalKind = "unreadable"    // an entry the booth could not read
	// RefusedJukeboxState is a change at or under another workspace's
	// jukebox state folder (a .jukebox below the workspace's top).
	RefusedJukeboxState RefusalKind = "jukebox-state"
)

// RunMode says how a run was made (RunStart.Mode). The child sees the same
// value in JUKEBOX_MODE.
type RunMode string

// Run modes.
const (
	ModeRecord RunMode = "record" // live, against the real upstreams
	ModeReplay RunMode = "replay" // served from a tape, offline
	ModeFork   RunMode = "fork"   // served from a parent tape up to a frame, live after it
)

// StagingMode is the Shadow Booth's staging mode a transaction asked
// for (TxBegin.Mode), not necessarily the one it got: sandbox.Mode is
// StagingMode.
type StagingMode string

// Staging modes.
const (
	StagingAuto    StagingMode = "auto"    // the overlay, or nothing (a copy before the confined field)
	StagingOverlay StagingMode = "overlay" // overlayfs in a user and mount namespace
	StagingReflink StagingMode = "reflink" // a copy of the staged view sharing extents
	StagingCopy    StagingMode = "copy"    // a plain copy of the staged view
	// StagingSDK is a transaction the agent opened itself through the
	// control API (the Python SDK's tx), staged in-process.
	StagingSDK StagingMode = "sdk"
)

// MCPDirection says which way an MCP message went (MCPMessage.Direction).
type MCPDirection string

// MCP message directions.
const (
	MCPToServer   MCPDirection = "to_server"   // from the agent to the server
	MCPFromServer MCPDirection = "from_server" // from the server to the agent
	// MCPStart opens a session: Message is {"argv": [...]}, the server's
	// command line (recorded, never compared).
	MCPStart MCPDirection = "start"
	// MCPOutbox holds a tools/call for the booth's commit: Message is
	// {"tool", "arguments", "key"}; when the commit runs it, its messages
	// follow as to_server and from_server of the same session.
	MCPOutbox MCPDirection = "outbox"
)

// ToolSource says where a tool call came from (ToolCall.Source).
type ToolSource string

// Tool call sources.
const (
	SourceLLM   ToolSource = "llm"   // a model's response asked for it
	SourceMCP   ToolSource = "mcp"   // an MCP client sent it
	SourceBooth ToolSource = "booth" // the Shadow Booth ran it
)

// EndReason says why a run ended other than by the child exiting on its
// own (RunEnd.Reason); empty when it did.
type EndReason string

// Run end reasons.
const (
	ReasonInterrupted EndReason = "interrupted" // stopped by a signal such as Ctrl-C
	ReasonCancelled   EndReason = "cancelled"   // stopped by jukebox itself, and the child killed
)

// RateSource says where a recorded rate came from.
type RateSource string

// Rate sources.
const (
	RateTable        RateSource = "table"              // jukebox's built-in price table
	RateFile         RateSource = "prices"             // a price file given with --prices (JUKEBOX_PRICES)
	RateUnknownModel RateSource = "unknown-model-rate" // --unknown-model-rate, for a model no table prices
)
