package engine

import (
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// NotReproduced says how a replay differs from its recording (what
// replay --strict fails on), "" when it does not: a divergence, calls
// that went live, recorded calls never asked for, MCP sessions not
// answered from the tape, stdout or the way the agent ended.
func (r *Result) NotReproduced() string {
	var why []string
	if r.Divergence != nil {
		why = append(why, "diverged "+r.Divergence.Where())
	}
	if live := r.LiveCalls(); live > 0 {
		why = append(why, termtext.Count(int(live), "call", "calls")+" went live")
	}
	if r.Unused > 0 {
		why = append(why, termtext.Count(r.Unused, "recorded call", "recorded calls")+" never asked for")
	}
	if len(r.MCPNotServed) > 0 {
		why = append(why, fmt.Sprintf("recorded MCP sessions not answered from the tape (%s): their servers may have run live", strings.Join(r.MCPNotServed, ", ")))
	}
	if r.OutputSame != nil && !*r.OutputSame {
		why = append(why, "stdout differs"+r.OutputDiff.Text())
	}
	if r.ExitSame != nil && !*r.ExitSame {
		was := ""
		if r.RecordedEnd != nil {
			was = ", recorded " + EndText(*r.RecordedEnd)
		}
		why = append(why, "the agent ended otherwise ("+EndText(r.End)+was+")")
	}
	return strings.Join(why, "; ")
}

// LiveCalls is the number of a replay's calls that did not come from the
// tape, but for those to --live hosts and telemetry jukebox answered.
func (r *Result) LiveCalls() uint64 {
	if r.Served == nil {
		return 0
	}
	off := *r.Served + r.AnsweredLocally + r.LiveAllowed
	if off > r.Calls {
		return 0
	}
	return r.Calls - off
}

// Text says where stdout first differs: " first at line N (recorded
// "…", replayed "…")", "" when d is nil; a line over maxShownLine bytes
// shows the part around its first difference (the whole lines are
// d.Recorded and d.Replayed).
func (d *OutputDiff) Text() string {
	if d == nil {
		return ""
	}
	return fmt.Sprintf(" first at line %d (recorded %q, replayed %q)", d.Line,
		clipAround(d.Recorded, d.Replayed, maxShownLine), clipAround(d.Replayed, d.Recorded, maxShownLine))
}

// maxShownLine is the longest output line a verdict quotes whole: an agent
// that prints its streamed answer on one line (or a progress bar) made the
// verdict hundreds of kilobytes long.
const maxShownLine = 240

// EndText says how a run ended: "exit N", "killed by SIG", "failed: …".
func EndText(end tapefmt.RunEnd) string {
	switch {
	case end.Signal != "":
		return "killed by " + end.Signal
	case end.Error != "":
		return "failed: " + end.Error
	case end.ExitCode < 0 && end.Reason != "":
		// Stopped by jukebox before it had an exit status (the turntable's
		// ctrl+c on a fork in the booth): -1 read as "could not start".
		return "stopped (" + string(end.Reason) + ")"
	}
	return fmt.Sprintf("exit %d", end.ExitCode)
}
