package engine

import "github.com/jukebox-os/jukebox/llmwire"

// EventKind says what happened in a run.
type EventKind int

// Events a run reports while it goes, for the turntable and progress lines.
const (
	EventRequest  EventKind = iota + 1 // a model call left the agent
	EventResponse                      // its answer was relayed
	EventOutput                        // the agent wrote to stdout or stderr
	EventDiverged                      // replay met a request the tape does not hold
	EventExit                          // the agent exited
	// EventChunk is a piece of a live call's answer as it arrived from
	// the upstream (Data, the bytes relayed; Call, the call): a fork's
	// call in flight can be shown as it streams. Only live calls, and
	// only with RunOptions.OnEvent set, make them.
	EventChunk
)

// Event is one thing that happened in a run.
type Event struct {
	Kind EventKind
	Seq  uint64 // frame written, when one was
	Call uint64
	// CallUsage is, for EventResponse, the call's usage, model and cost as
	// llmwire.ResponseUsage finds them on the tape, so a live counter
	// agrees with `ls` and the turntable; for EventRequest, Model is the
	// one asked for.
	llmwire.CallUsage
	Data []byte      // output bytes
	Div  *Divergence // for EventDiverged
}
