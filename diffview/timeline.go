package diffview

import (
	"time"
)

// Timeline is one run as the diff sees it: a name for headings and the
// frames that take part in the alignment, in order.
type Timeline struct {
	Name     string        `json:"name"`
	Frames   []Frame       `json:"frames"`
	Steps    int           `json:"steps"`       // whole agent steps in the run
	Duration time.Duration `json:"duration_ns"` // run time to the last frame
	// TapeFrames is the number of frames on the tape, Frames and those left
	// out of the alignment together; 0 means len(Frames).
	TapeFrames int `json:"tape_frames,omitempty"`
	// Files says the run's file changes are on its tape (FileKind frames:
	// it ran in the Shadow Booth). Compare leaves them out when only one
	// side has them.
	Files bool `json:"files,omitempty"`
	// NoOutput says the run's output is not on its tape: jukebox did not
	// start its process (jukebox serve, a program recording itself).
	// Compare leaves the other side's OutputKind frames out then.
	NoOutput bool `json:"no_output,omitempty"`
}

// Frame is one event of a timeline. Alignment compares Signature only; a
// pair with equal signatures is the same frame when Title and Body are
// equal too, and changed otherwise.
type Frame struct {
	Seq  int    `json:"seq"`  // frame number in the tape
	Kind string `json:"kind"` // dotted kind name (tapefmt.Kind.String), e.g. llm.request
	// Signature says what the frame is, not what it says: kind plus endpoint,
	// tool name or file path. Frames pair up when their signatures match.
	Signature string        `json:"signature"`
	Title     string        `json:"title"`          // one line: what a reader sees first
	Body      string        `json:"body,omitempty"` // the text the word diff compares
	Tokens    int64         `json:"tokens,omitempty"`
	Cost      float64       `json:"cost_usd,omitempty"`
	Unpriced  bool          `json:"unpriced,omitempty"`   // a call that used Tokens at no known price (Cost is 0, not free)
	Estimated bool          `json:"estimated,omitempty"`  // a call whose answer reported no usage: Tokens were counted from the text
	Latency   time.Duration `json:"latency_ns,omitempty"` // time the call took
	Time      time.Duration `json:"time_ns"`              // offset from the start of the run
}

// Totals sums one side of a comparison; Delta in a Result is right minus left.
type Totals struct {
	Frames   int     `json:"frames"` // Timeline.TapeFrames, or the aligned frames
	Steps    int     `json:"steps"`
	Calls    int     `json:"llm_calls"` // llm.response frames
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost_usd"`                 // of the priced calls and of the agent's turns that report one, as ls counts it
	Unpriced int     `json:"unpriced_calls,omitempty"` // calls whose cost is unknown, left out of Cost
	// Estimated counts the calls whose usage was counted, not reported:
	// Tokens and Cost are shown with a "~".
	Estimated int           `json:"estimated_calls,omitempty"`
	Latency   time.Duration `json:"latency_ns"`
	Duration  time.Duration `json:"duration_ns"`
}

// CallKind is the Kind of the frame that ends a model call, counted in
// Totals.Calls: tapefmt's name for an llm.response, which diffview, a leaf,
// does not import (timeline's TestDiffviewKindNames keeps the two equal).
const CallKind = "llm.response"

// FileKind is the Kind of a file change, tapefmt's file.change.
const FileKind = "file.change"

// OutputKind is the kind of the frames of a run's output.
const OutputKind = "proc.output"

// totalsOf sums a timeline.
func totalsOf(tl Timeline) Totals {
	t := Totals{Frames: tl.TapeFrames, Steps: tl.Steps, Duration: tl.Duration}
	if t.Frames == 0 {
		t.Frames = len(tl.Frames)
	}
	for _, f := range tl.Frames {
		if f.Kind == CallKind {
			t.Calls++
		}
		t.Tokens += f.Tokens
		t.Cost += f.Cost
		if f.Unpriced {
			t.Unpriced++
		}
		if f.Estimated {
			t.Estimated++
		}
		t.Latency += f.Latency
	}
	return t
}

// sub returns t minus u, field by field.
func (t Totals) sub(u Totals) Totals {
	return Totals{Frames: t.Frames - u.Frames, Steps: t.Steps - u.Steps, Calls: t.Calls - u.Calls,
		Tokens: t.Tokens - u.Tokens, Cost: t.Cost - u.Cost, Unpriced: t.Unpriced - u.Unpriced, Estimated: t.Estimated - u.Estimated, Latency: t.Latency - u.Latency,
		Duration: t.Duration - u.Duration}
}
