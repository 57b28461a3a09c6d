package timeline

import (
	"errors"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// What the turntable needs of the format, so that it reads tapes only
// through timeline and never imports tapefmt (ARCHITECTURE.md).

// Kind says what a frame records (tapefmt.Kind).
type Kind = tapefmt.Kind

// Frame kinds, as tapefmt numbers them.
const (
	KindRunStart     = tapefmt.KindRunStart
	KindRunEnd       = tapefmt.KindRunEnd
	KindStep         = tapefmt.KindStep
	KindLLMRequest   = tapefmt.KindLLMRequest
	KindLLMResponse  = tapefmt.KindLLMResponse
	KindToolCall     = tapefmt.KindToolCall
	KindToolResult   = tapefmt.KindToolResult
	KindMCP          = tapefmt.KindMCP
	KindFileChange   = tapefmt.KindFileChange
	KindOutput       = tapefmt.KindOutput
	KindClock        = tapefmt.KindClock
	KindSeed         = tapefmt.KindSeed
	KindTxBegin      = tapefmt.KindTxBegin
	KindTxCommit     = tapefmt.KindTxCommit
	KindTxRollback   = tapefmt.KindTxRollback
	KindBreakerTrip  = tapefmt.KindBreakerTrip
	KindAgentTurn    = tapefmt.KindAgentTurn
	KindMarker       = tapefmt.KindMarker
	KindNetRefused   = tapefmt.KindNetRefused
	KindHTTPRequest  = tapefmt.KindHTTPRequest
	KindHTTPResponse = tapefmt.KindHTTPResponse
	KindNetConn      = tapefmt.KindNetConn
	KindControl      = tapefmt.KindControl
	KindSnapshot     = tapefmt.KindSnapshot
)

// RemoteOpener opens a store's tape by its URL (tapestore.Opener): what
// a reader of tapes is handed to read those too.
type RemoteOpener = tapefmt.RemoteOpener

// IsRemote reports whether a tape's name is a URL, a tape in a store,
// rather than a path: such a tape has no folder beside it here, and each
// read of it may be a round trip.
func IsRemote(name string) bool { return tapefmt.IsRemote(name) }

// Remote reports whether the tape is read from a store (IsRemote).
func (tl *Timeline) Remote() bool { return IsRemote(tl.path) }

// NotSealed reports whether err says a tape carries no seal to check.
func NotSealed(err error) bool { return errors.Is(err, tapefmt.ErrNotSealed) }

// Damage is where a tape that does not read is damaged, as the format
// tells it.
type Damage struct {
	Offset int64  // byte offset in the file where the damage starts
	Frame  int64  // the frame involved, or -1 when none
	Msg    string // what is wrong
}

// DamageOf finds the damage err reports, when it is a format error.
func DamageOf(err error) (Damage, bool) {
	var fe *tapefmt.FormatError
	if !errors.As(err, &fe) {
		return Damage{}, false
	}
	return Damage{Offset: fe.Offset, Frame: fe.Frame, Msg: fe.Msg}, true
}

// Command is the agent's command line as the run's first frame records
// it, argv joined by spaces; "" when the tape does not start with a run
// or its first frame is not read yet.
func (tl *Timeline) Command() string {
	r := tl.Peek(0)
	if r.Kind != tapefmt.KindRunStart || r.Pending {
		return ""
	}
	if rs, ok := r.Payload.(*tapefmt.RunStart); ok {
		return strings.Join(rs.Argv, " ")
	}
	return ""
}

// Start is the run's first frame, its run.start; nil when the tape does
// not start with a run or the frame is not read yet.
func (tl *Timeline) Start() *tapefmt.RunStart {
	r := tl.Peek(0)
	if r.Kind != tapefmt.KindRunStart || r.Pending {
		return nil
	}
	rs, _ := r.Payload.(*tapefmt.RunStart)
	return rs
}

// Recording reports whether the tape is still being recorded: a file
// whose writer still holds it (tapefmt.Recording), so that it grows and
// its torn tail is the step in progress, not damage.
func (tl *Timeline) Recording() bool {
	return !tl.Remote() && tl.Recovered() != nil && tapefmt.Recording(tl.path)
}
