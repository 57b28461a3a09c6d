package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ReplayCmd replays a recorded run offline.
type ReplayCmd struct {
	Tape         string    `arg:"" type:"tape" help:"The tape to replay (a file, or a tape in a store)."`
	Cmd          []string  `arg:"" optional:"" passthrough:"partial" name:"command" help:"The agent to run, after -- (default: the recorded command)."`
	Speed        string    `default:"instant" help:"Pace of streamed responses: instant, realtime, or a factor such as 2x."`
	OnDivergence string    `enum:"stop,live" default:"stop" help:"On a request the tape does not hold: stop (exit 5 with a report), or live: go to the real upstream from there and record the rest (needs -o or records to ./tapes)."`
	Upstream     upstreams `placeholder:"NAME=URL" help:"Upstreams for --on-divergence live, as in record."`
	Output       string    `short:"o" type:"path" placeholder:"FILE" help:"Also record the replayed run onto this tape."`
	Seed         int64     `help:"Seed for the agent (default: the recorded one)."`
	QuietSDKs    bool      `name:"quiet-sdks" default:"true" negatable:"" help:"Switch off the SDKs' own traces and telemetry in the agent's environment (the variables docs/recording.md lists); on by default, --no-quiet-sdks leaves the environment as it is."`
	Strict       bool      `help:"Exit 6 unless the run reproduced the recording: the agent's stdout and exit status the same, every recorded call asked for, none gone live. For CI."`
	Dir          string    `type:"path" help:"Working directory (default: the current one)."`
	Repeat       bool      `help:"Serve a recorded answer again to a request asked more often than it was recorded (instead of diverging), and say how often."`
	outputFlags
	matchFlags
	rememberFlag
	liveFlags
	redactFlags
	captureFlags
	boothFlags
	storeFlags
	JSON bool `help:"After the run, print the result as JSON on stdout (the agent's own stdout then goes to stderr)."`

	recordMode string         // record --record-mode's, written on the tape (-o)
	ran        *engine.Result // the run's result, once Run has one (record --record-mode new reads it)
}

// Validate checks flags before anything starts.
func (c *ReplayCmd) Validate() error {
	if err := commandAfterTape(c.Tape, c.Cmd); err != nil {
		return err
	}
	if err := agentDirFlag(c.Dir); err != nil {
		return err
	}
	if _, err := engine.ParseSpeed(c.Speed); err != nil {
		return fmt.Errorf("--speed: %w", err)
	}
	hosts, err := c.liveHosts()
	if err != nil {
		return err
	}
	if len(c.Upstream) > 0 && c.OnDivergence != "live" && len(hosts) == 0 {
		return fmt.Errorf("--upstream only matters with --on-divergence live or --live: replay sends nothing else")
	}
	if err := c.matchFlags.validate(); err != nil {
		return err
	}
	if err := c.outputFlags.validate(); err != nil {
		return err
	}
	if err := c.captureFlags.validate(); err != nil {
		return err
	}
	if err := c.redactFlags.validate(); err != nil {
		return err
	}
	if err := c.storeFlags.validate(); err != nil {
		return err
	}

	return c.boothFlags.validate()
}

// agentDirFlag checks --dir, the agent's folder, before anything starts:
// a folder named that is not there is a usage error (exit 2), as
// exit-codes.md says; it was exit 1 once the run was set up.
func agentDirFlag(dir string) error {
	if dir == "" {
		return nil
	}
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--dir %s: no such folder", dir)
	case err != nil:
		return fmt.Errorf("--dir %s: %w", dir, errors.Unwrap(err))
	case !fi.IsDir():
		return fmt.Errorf("--dir %s: not a folder", dir)
	}
	return nil
}

// Run replays and exits 5 on a divergence, else with the agent's exit code.
func (c *ReplayCmd) Run(ctx context.Context, env *Env) error {
	var err error
	if c.Tape, err = env.tape(ctx, c.Tape); err != nil {
		return err
	}
	rec, err := parentStart(env.remote(), c.Tape, env.Stderr)
	if err != nil {
		return err
	}
	if err := refuseHarness(c.Tape, rec, c.Cmd); err != nil {
		return err
	}
	speed, _ := engine.ParseSpeed(c.Speed)
	hosts, _ := c.liveHosts()
	rules, err := c.rules(c.Tape, c.Strict, env.Stderr)
	if err != nil {
		return err
	}
	out := c.Output
	if _, err := os.Lstat(out); out != "" && err == nil {
		// Before anything starts, as record says it: it was the writer's
		// "create tape: open ...: file exists", exit 1, the agent started.
		return withCode(ExitUsage, fmt.Errorf("-o %s is there, and replay does not overwrite a tape: remove it or name another", out))
	}
	if out == "" && c.OnDivergence == "live" {
		var err error
		if out, err = tapePath("", "replay"); err != nil {
			return err
		}
	}
	if err := c.checkStreams(env); err != nil {
		return err
	}
	o := runOptions(env, c.Cmd, "", c.Seed, c.JSON)
	o.SourceName = env.sourceName(c.Tape)
	o.StopGrace = c.StopGrace // outside the booth too
	c.captureFlags.apply(&o)
	if o.Redact, err = c.patterns(); err != nil {
		return err
	}
	var tty *ttyGuard
	o.Booth, tty = c.boothOptions(env)
	defer tty.restore()
	o.Dir, o.AutoName, o.QuietSDKs, o.IgnoreOutput = c.Dir, c.Output == "", c.QuietSDKs, c.IgnoreOutput
	o.RecordMode = c.recordMode
	pg, err := startPG(ctx, c.PG, o.Booth, env)
	if err != nil {
		return err
	}
	defer pg.close()
	if err := c.checkStore(ctx, env.Stderr); err != nil {
		return err
	}
	o.Starting = func() { announceRecorded(env.Stderr, c.Cmd, rec) }
	res, err := engine.Replay(agentContext(ctx), engine.ReplayOptions{Remote: env.remote(),
		RunOptions: o, From: c.Tape, Tape: out, Speed: speed, Repeat: c.Repeat,
		Rules: rules, Live: c.OnDivergence == "live", Upstreams: c.Upstream, LiveHosts: hosts})
	c.ran = res
	c.remember(c.RememberRules, c.Tape, err, env.Stderr)
	err = dirHint(err, commandArgs(c.Cmd), c.Dir, rec)
	if res != nil {
		printBooth(env, res.Booth)
		c.upload(ctx, env.Stderr, res.Tape)
	}
	if err := runFailed(err, res); err != nil {
		return failedJSON(env, res, c.JSON, err)
	}
	// What may explain a difference (a folder, a variable other than the
	// recording's) is said beside a divergence too: it went unsaid there,
	// where it is most needed, in --json alone (environment_changed).
	causes := func() {
		elsewhereNote(env.Stderr, c.Dir, c.Cmd, rec, res)
		envNote(env.Stderr, c.Tape, rec, res)
	}
	if d := res.Divergence; d != nil && c.OnDivergence == "stop" && res.Unreadable == "" {
		causes()
		if c.JSON {
			writeJSON(env.Stdout, res)
		}
		return withCode(ExitDiverged, d)
	}
	if err := mcpDiverged(res, c.OnDivergence, c.JSON, env); err != nil {
		causes()
		return err
	}
	networkNotes(env.Stderr, res, true)
	causes()
	commitNote(env.Stderr, res)
	if c.Strict {
		if why := res.NotReproduced(); why != "" {
			return finishStrict(env, res, c.JSON, replayLine(res), why)
		}
	}
	return finishRun(env, res, c.JSON, replayLine(res))
}

// refuseHarness refuses (exit 2) to run the recorded command of a tape
// whose command is not the agent's (harnessTape), naming the runner that
// replays it; a command given after -- runs all the same.
func refuseHarness(tape string, rec *tapefmt.RunStart, cmd []string) error {
	if why := harnessTape(tape, rec); why != "" && len(commandArgs(cmd)) == 0 {
		return withCode(ExitUsage, fmt.Errorf("%s: %s (to run a command against its calls all the same, give it after --)", tape, why))
	}
	return nil
}

// announceRecorded says which command a replay runs when it is the one
// the tape recorded (no command after --): a tape is anyone's file, and
// what it runs is shown before it runs.
func announceRecorded(w io.Writer, cmd []string, rec *tapefmt.RunStart) {
	if len(commandArgs(cmd)) > 0 || rec == nil || len(rec.Argv) == 0 || redact.RedactedArg(rec.Argv) >= 0 {
		return
	}
	fmt.Fprintf(w, "jukebox: note: running the recorded command: %s (a command after -- runs instead)\n", quoteArgv(rec.Argv))
}

// mcpDiverged is a replay's divergence in its MCP sessions: requests the
// tape does not hold, answered with an error (jukebox mcp named each on
// stderr), exit 5 as a model call's would be; nil when there were none or
// the replay goes live on divergence. Recorded sessions no jukebox mcp
// asked for are a note here, and fail --strict.
func mcpDiverged(res *engine.Result, onDivergence string, asJSON bool, env *Env) error {
	if len(res.MCPNotServed) > 0 {
		fmt.Fprintf(env.Stderr, "jukebox: the recorded MCP sessions %s were not answered from the tape: no jukebox mcp of this replay asked for them, so their servers may have run live (docs/mcp.md)\n", strings.Join(res.MCPNotServed, ", "))
	}
	if res.MCPMissing == 0 || onDivergence != "stop" || res.Unreadable != "" {
		return nil
	}
	if asJSON {
		writeJSON(env.Stdout, res)
	}
	return withCode(ExitDiverged, fmt.Errorf("replay diverged: %d MCP requests the tape does not hold were answered with an error (named above)", res.MCPMissing))
}

// finishStrict ends a --strict replay that did not reproduce its
// recording: exit 6, after what finishRun would say and ahead of the
// agent's own code (but behind an unreadable tape, refused entries or
// the user's interrupt).
func finishStrict(env *Env, res *engine.Result, asJSON bool, line, why string) error {
	err := finishRun(env, res, asJSON, line)
	if res.Unreadable != "" || refusedExit(res) != nil {
		return err
	}
	if res.Interrupted == nil && interruptedExit(res) != nil {
		return err // the user's Ctrl-C, not one the recording had: 130
	}
	return withCode(ExitDiffers, fmt.Errorf("replay --strict: the run did not reproduce the recording: %s", why))
}

func replayLine(res *engine.Result) string {
	served := res.Calls
	if res.Served != nil {
		served = *res.Served
	}
	s := fmt.Sprintf("replayed %s from the tape", termtext.Count(int(served), "call", "calls"))
	if live := res.LiveCalls(); live > 0 {
		s += fmt.Sprintf(", %d went live", live)
	}
	if res.ControlServed > 0 {
		s += fmt.Sprintf(", %d control-API exchanges", res.ControlServed)
	}
	if res.LiveAllowed > 0 {
		s += fmt.Sprintf(", %d sent live to --live hosts", res.LiveAllowed)
	}
	if res.AnsweredLocally > 0 {
		s += fmt.Sprintf(", %d SDK telemetry requests answered locally", res.AnsweredLocally)
	}
	if res.Repeated > 0 {
		s += fmt.Sprintf(", %s served again (--repeat)", termtext.Count(res.Repeated, "answer", "answers"))
	}
	if res.Interrupted != nil {
		s += fmt.Sprintf(", the agent interrupted (%s) at call #%d, where the recording was", cmp.Or(res.InterruptedBy, "SIGINT"), *res.Interrupted)
	}
	if res.Divergence != nil {
		s += ", diverged " + res.Divergence.Where()
	}
	if res.Unused > 0 {
		s += ", " + termtext.Count(res.Unused, "recorded call", "recorded calls") + " never asked for"
	}
	if res.OutputSame != nil {
		if *res.OutputSame && res.OutputSwapped {
			s += ", stdout the recording's up to answers swapped among identical requests (threads)"
		} else if *res.OutputSame {
			s += ", stdout identical to the recording"
		} else {
			s += ", stdout differs from the recording" + res.OutputDiff.Text()
		}
	}
	if res.OutputNotRecorded {
		s += ", stdout not compared (the recording has none: jukebox did not start its process, jukebox serve did or it recorded itself)"
	}
	if res.ExitSame != nil && !*res.ExitSame {
		s += ", exit status differs from the recording"
	}
	return s
}
