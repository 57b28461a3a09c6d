package timeline

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Class is a set of kinds of frame a view can keep (ViewOptions.Only).
type Class uint8

// The classes, as the turntable's filter offers them.
const (
	ClassLLM    Class = 1 << iota // llm.request, llm.response, agent.turn
	ClassTools                    // tool.call, tool.result, mcp.message
	ClassFiles                    // file.change
	ClassOutput                   // proc.output
	ClassErrors                   // a failed call, tool error, non-zero exit, trip, an unreadable frame
	ClassTx                       // tx.begin, tx.commit, tx.rollback
)

// Classes are the filter's choices, in the order it offers them.
var Classes = []Class{ClassLLM, ClassTools, ClassFiles, ClassOutput, ClassErrors, ClassTx}

// String names the class for a title line.
func (c Class) String() string {
	names := []string{"LLM", "tools", "files", "output", "errors", "transactions"}
	var out []string
	for i, n := range names {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, "+")
}

// classOf is the class of a kind, 0 for kinds no class names (run.start,
// run.end, clock, seed, markers): a filtered view keeps only the run's
// start and end of those.
func classOf(k tapefmt.Kind) Class {
	switch k {
	case tapefmt.KindLLMRequest, tapefmt.KindLLMResponse, tapefmt.KindAgentTurn:
		return ClassLLM
	case tapefmt.KindToolCall, tapefmt.KindToolResult, tapefmt.KindMCP,
		tapefmt.KindHTTPRequest, tapefmt.KindHTTPResponse, tapefmt.KindNetConn:
		return ClassTools
	case tapefmt.KindFileChange:
		return ClassFiles
	case tapefmt.KindOutput:
		return ClassOutput
	case tapefmt.KindTxBegin, tapefmt.KindTxCommit, tapefmt.KindTxRollback, tapefmt.KindControl:
		return ClassTx
	case tapefmt.KindNetRefused:
		return ClassErrors
	}
	return 0
}

// ViewOptions say which rows a view of the timeline has.
type ViewOptions struct {
	// Fold: a run of two or more proc.output frames in a row is one row,
	// unless its first frame is in Open.
	Fold bool
	Open map[int]bool
	// Only keeps the frames of these classes (0: every frame), with the
	// run's start and end and the step rules of the steps that keep a row. Keeping errors reads the
	// frames that can be one.
	Only Class
	// Steps: one row per step, whatever Fold and Only say.
	Steps bool
	// Keep, when not nil, keeps only these frames (a search's matches),
	// with the run's start and end; the step rules go.
	Keep map[int]bool
}

// Identity reports whether o shows every frame as a row of its own.
func (o ViewOptions) Identity() bool { return !o.Fold && o.Only == 0 && !o.Steps && o.Keep == nil }

// Entry is one row of a view: the frames First to Last. Last > First for a
// folded run of output or a step.
type Entry struct {
	First, Last int
}

// Folded reports whether the row stands for more than one frame.
func (e Entry) Folded() bool { return e.Last > e.First }

// View lists the rows of the view o asks for. Kinds come from the index,
// so a view over 100,000 frames takes milliseconds; only the error filter
// reads frames (those that can be errors), and honours ctx.
func (tl *Timeline) View(ctx context.Context, o ViewOptions) ([]Entry, error) {
	return tl.ViewProgress(ctx, o, nil)
}

// ViewProgress is View that calls progress (when not nil) every 1024
// frames with how many it has read and how many rows it has kept: what a
// view that reads frames (the error filter) shows while it works.
func (tl *Timeline) ViewProgress(ctx context.Context, o ViewOptions, progress func(read, rows int)) ([]Entry, error) {
	n := tl.Len()
	if o.Steps {
		out := make([]Entry, 0, len(tl.steps)+1)
		for s := 0; ; s++ {
			first, next := tl.StepStart(s), tl.StepStart(s+1)
			if first >= n {
				break
			}
			out = append(out, Entry{First: first, Last: next - 1})
		}
		// The run's end after the last step is no step of its own.
		if l := len(out); l > 1 && out[l-1].First == n-1 {
			if k, _ := tl.KindAt(n - 1); k == tapefmt.KindRunEnd {
				out[l-2].Last, out = n-1, out[:l-1]
			}
		}
		return out, nil
	}
	out := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		if progress != nil && i%1024 == 0 {
			progress(i, len(out))
		}
		k, _ := tl.KindAt(i)
		if o.Keep != nil && !o.Keep[i] && k != tapefmt.KindRunStart && k != tapefmt.KindRunEnd {
			continue
		}
		if o.Only != 0 && k != tapefmt.KindStep && k != tapefmt.KindRunStart && k != tapefmt.KindRunEnd {
			keep := classOf(k)&o.Only != 0
			if !keep && o.Only&ClassErrors != 0 {
				if i%1024 == 0 && ctx.Err() != nil {
					return nil, ctx.Err()
				}
				keep = tl.matches(i, k, FindError)
			}
			if !keep {
				continue
			}
		}
		if o.Fold && k == tapefmt.KindOutput && len(out) > 0 {
			// Frames between this one and the row before were filtered
			// out (a step rule never is), so output rows in a row are a run.
			last := &out[len(out)-1]
			if lk, _ := tl.KindAt(last.First); lk == tapefmt.KindOutput {
				last.Last = i
				continue
			}
		}
		if k == tapefmt.KindStep && !o.Identity() && emptyStep(tl, out) {
			continue
		}
		out = append(out, Entry{First: i, Last: i})
	}
	if !o.Fold || len(o.Open) == 0 {
		return out, nil
	}
	// An opened run is its output frames again.
	opened := make([]Entry, 0, len(out))
	for _, e := range out {
		if !e.Folded() || !o.Open[e.First] {
			opened = append(opened, e)
			continue
		}
		for i := e.First; i <= e.Last; i++ {
			if k, _ := tl.KindAt(i); k == tapefmt.KindOutput {
				opened = append(opened, Entry{First: i, Last: i})
			}
		}
	}
	return opened, nil
}

// emptyStep reports whether a step rule after the rows out would close a
// step with no row of its own: out is empty or ends with the run's start
// or another step rule. A filtered or folded view leaves such rules out
// (keeping errors on a long run once showed thousands of empty rules).
func emptyStep(tl *Timeline, out []Entry) bool {
	if len(out) == 0 {
		return true
	}
	k, _ := tl.KindAt(out[len(out)-1].First)
	return k == tapefmt.KindStep || k == tapefmt.KindRunStart
}

// EntryOf returns the row of entries that holds frame i, or the last row
// before it when i is hidden (0 when none).
func EntryOf(entries []Entry, i int) int {
	r := sort.Search(len(entries), func(j int) bool { return entries[j].First > i })
	return max(r-1, 0)
}

// StepSummary is what one step did: a step-summary row.
type StepSummary struct {
	Step          int
	Calls         int // llm.request frames
	Tools         int // tool.call and mcp.message frames
	Files         int // file.change frames
	Tokens        int64
	Cost          float64
	Unpriced      int // calls whose cost is not known
	Estimated     int // calls whose usage was counted, not reported ("~")
	Latency       time.Duration
	Errors        bool
	First, Frames int
}

// SummarizeStep sums the frames of e, a step's row (or any span of frames).
// Counts come from the index; tokens and cost from the running totals.
func (tl *Timeline) SummarizeStep(e Entry) StepSummary {
	s := StepSummary{Step: tl.StepOf(e.First), First: e.First, Frames: e.Last - e.First + 1}
	_, t0 := tl.KindAt(e.First)
	_, t1 := tl.KindAt(e.Last)
	s.Latency = t1 - t0
	for i := e.First; i <= e.Last; i++ {
		switch k, _ := tl.KindAt(i); k {
		case tapefmt.KindLLMRequest:
			s.Calls++
		case tapefmt.KindToolCall, tapefmt.KindMCP:
			s.Tools++
		case tapefmt.KindFileChange:
			s.Files++
		case tapefmt.KindLLMResponse, tapefmt.KindToolResult, tapefmt.KindRunEnd, tapefmt.KindBreakerTrip:
			s.Errors = s.Errors || tl.Row(i).Error
		}
	}
	tok1, cost1 := tl.Totals(e.Last)
	var tok0 int64
	var cost0 float64
	unpriced0, estimated0 := 0, 0
	if e.First > 0 {
		tok0, cost0 = tl.Totals(e.First - 1)
		unpriced0, estimated0 = tl.Unpriced(e.First-1), tl.Estimated(e.First-1)
	}
	s.Tokens, s.Cost, s.Unpriced = tok1-tok0, cost1-cost0, tl.Unpriced(e.Last)-unpriced0
	s.Estimated = tl.Estimated(e.Last) - estimated0
	return s
}
