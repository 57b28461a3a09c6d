package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
)

// RecordCmd records an agent run onto a tape.
type RecordCmd struct {
	Name      string    `help:"Run name (default: the script or command name)."`
	Output    string    `short:"o" type:"path" placeholder:"FILE" help:"Tape to write (default ./tapes/<name>-<time>.jbx). Never overwritten."`
	Upstream  upstreams `placeholder:"NAME=URL" help:"Send a provider's calls elsewhere (a gateway, a local model), e.g. openai=http://127.0.0.1:8931/v1. Repeatable. Default: the agent's own OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the public API."`
	Seed      int64     `help:"Seed handed to the agent as JUKEBOX_SEED and PYTHONHASHSEED (default: random, recorded)."`
	Sync      string    `enum:"step,never,frame" default:"step" help:"When to fsync the tape: step (the default) hands each step to the OS as it ends and fsyncs in the background at most every 100 ms; frame fsyncs every frame; never leaves it to the OS."`
	JSON      bool      `help:"After the run, print the result as JSON on stdout (the agent's own stdout then goes to stderr)."`
	MCPURL    []string  `name:"mcp-url" placeholder:"NAME=URL" help:"An MCP server that speaks streamable HTTP: jukebox serves a recording proxy to it and gives the agent its URL in JUKEBOX_MCP_URL_NAME (replay and fork serve it from the tape). Repeatable."`
	MCPPolicy string    `name:"mcp-policy" type:"existingfile" placeholder:"FILE" env:"JUKEBOX_MCP_POLICY" help:"Booth policy for tools/call (JSON, see docs/mcp.md, as jukebox mcp --policy): run now, hold in the booth's outbox until the commit, or refuse, by server and tool, for the --mcp-url servers; and the only one under which a call held in the booth runs on the host at the commit, for those and for the stdio servers the agent starts whose command it names."`
	QuietSDKs bool      `name:"quiet-sdks" help:"Switch off the SDKs' own traces and telemetry in the agent's environment (the variables docs/recording.md lists), so the agent makes no connection past jukebox for them. Replay and fork do this by default."`
	redactFlags
	matchFlags
	outputFlags
	recordModeFlag
	captureFlags
	breakerFlags
	otlpFlags
	boothFlags
	storeFlags
	tagFlags
	Cmd []string `arg:"" passthrough:"partial" name:"command" help:"The agent to run, after --, e.g. -- python agent.py."`

	mcpPolicy *mcp.Policy // read from MCPPolicy by Validate
	// recordMode is the mode written on the tape, when a mode records
	// to a tape of its own (--record-mode all).
	recordMode string
	// ran is the run's result, once Run has one (--record-mode all reads
	// it).
	ran *engine.Result
}

// Validate checks flags before anything starts.
func (c *RecordCmd) Validate() error {
	if _, err := c.tags(); err != nil {
		return err
	}
	if len(commandArgs(c.Cmd)) == 0 {
		return fmt.Errorf("no command to record: give it after --, e.g. jukebox record -- python agent.py")
	}
	if err := c.captureFlags.validate(); err != nil {
		return err
	}
	if err := c.matchFlags.validate(); err != nil {
		return err
	}
	if err := c.outputFlags.validate(); err != nil {
		return err
	}
	if err := c.recordModeFlag.validate(c.Output); err != nil {
		return err
	}
	if err := c.redactFlags.validate(); err != nil {
		return err
	}
	if err := c.breakerFlags.validate(); err != nil {
		return err
	}
	if _, err := mcpURLs(c.MCPURL); err != nil {
		return err
	}
	if c.MCPPolicy != "" {
		var err error
		if c.mcpPolicy, err = mcp.LoadPolicy(c.MCPPolicy); err != nil {
			return fmt.Errorf("--mcp-policy %w", err)
		}
	}
	if err := c.otlpFlags.validate(); err != nil {
		return err
	}
	if err := c.storeFlags.validate(); err != nil {
		return err
	}
	return c.boothFlags.validate()
}

// mcpURLs reads --mcp-url NAME=URL pairs.
func mcpURLs(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		name, raw, ok := strings.Cut(p, "=")
		u, err := url.Parse(raw)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("--mcp-url %q: want NAME=URL, e.g. everything=http://127.0.0.1:3001/mcp", p)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return nil, fmt.Errorf("--mcp-url %s: %q is not an http(s) URL", name, raw)
		case out[name] != "":
			return nil, fmt.Errorf("--mcp-url %s: given twice", name)
		}
		out[name] = raw
	}
	return out, nil
}

// Run records the agent and exits with the agent's exit code.
func (c *RecordCmd) Run(ctx context.Context, env *Env) error {
	if done, err := c.byRecordMode(ctx, env); done {
		return err
	}
	name := c.Name
	if name == "" {
		name = runName(commandArgs(c.Cmd))
	}
	path, err := tapePath(c.Output, name)
	if err != nil {
		return err
	}
	if err := c.checkStreams(env); err != nil {
		return err
	}
	o := runOptions(env, c.Cmd, name, c.Seed, c.JSON)
	o.StopGrace = c.StopGrace // outside the booth too
	c.captureFlags.apply(&o)
	if o.Redact, err = c.patterns(); err != nil {
		return err
	}
	if o.Tags, err = c.tags(); err != nil {
		return err
	}
	if o.Limits, err = c.limits(name); err != nil {
		return err
	}
	if o.MCP, err = mcpURLs(c.MCPURL); err != nil {
		return err
	}
	o.MCPPolicy = c.mcpPolicy
	if c.MCPPolicy != "" {
		// The stdio servers the agent starts through jukebox mcp read the
		// policy from the environment (jukebox mcp --policy's variable):
		// given as a flag, it reached none of them, which ran every call.
		abs, err := filepath.Abs(c.MCPPolicy)
		if err != nil {
			return err
		}
		o.Env = append(os.Environ(), "JUKEBOX_MCP_POLICY="+abs)
	}
	var tty *ttyGuard
	o.Booth, tty = c.boothOptions(env)
	defer tty.restore()
	o.AutoName, o.QuietSDKs = c.Output == "", c.QuietSDKs
	o.Match, o.IgnoreOutput, o.RecordMode = c.forTape(), c.IgnoreOutput, c.recordMode
	if o.RecordMode == "" {
		o.RecordMode = c.RecordMode
	}
	o.OnTape = func(p string) { fmt.Fprintf(env.Stderr, "jukebox: recording to %s\n", p) }
	exported, err := c.otlpFlags.start(ctx, &o, env.Stderr)
	if err != nil {
		return err
	}
	pg, err := startPG(ctx, c.PG, o.Booth, env)
	if err != nil {
		return err
	}
	defer pg.close()
	if err := c.checkStore(ctx, env.Stderr); err != nil {
		return err
	}
	res, err := engine.Record(agentContext(ctx), engine.RecordOptions{
		RunOptions: o, Tape: path, Upstreams: c.Upstream, Sync: syncPolicy(c.Sync)})
	c.ran = res
	if res != nil {
		printBooth(env, res.Booth)
		c.upload(ctx, env.Stderr, res.Tape)
	}
	exported(res)
	if err := runFailed(err, res); err != nil {
		return failedJSON(env, res, c.JSON, err)
	}
	networkNotes(env.Stderr, res, false)
	return finishRun(env, res, c.JSON, fmt.Sprintf("recorded %s%s, %d frames to %s", termtext.Count(int(res.Calls), "call", "calls"), refusedNote(res), res.Frames, res.Tape))
}

// refusedNote says how many of a run's calls the breaker refused.
func refusedNote(res *engine.Result) string {
	if res.Refused == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d refused by the circuit breaker, not sent)", res.Refused)
}

// failedJSON returns err, a run's failure (runFailed), having written the
// run's result as --json asks when there is one: an agent that could not
// start still has its tape and its end (end.error).
func failedJSON(env *Env, res *engine.Result, asJSON bool, err error) error {
	if asJSON && res != nil {
		writeJSON(env.Stdout, res)
	}
	return err
}

// runOptions are the agent's options; the agent gets the signals main
// catches. With --json the agent's stdout goes to stderr, so that stdout
// holds nothing but the JSON result.
func runOptions(env *Env, argv []string, name string, seed int64, asJSON bool) engine.RunOptions {
	argv = commandArgs(argv)
	stdout := env.Stdout
	if asJSON {
		stdout = env.Stderr
	}
	return engine.RunOptions{Argv: argv, Stdin: env.Stdin, Stdout: stdout, Stderr: env.Stderr,
		Seed: seed, Name: name, Version: version, Signals: env.Signals}
}

// runFailed is the error a run command returns at once: nil when the run
// ended and its only fault is a tape that does not read back (the result
// says so and finishRun reports it), else err, with the tape's fault joined
// so that neither is lost (a booth that failed to commit, say).
func runFailed(err error, res *engine.Result) error {
	if err == nil || res == nil {
		return err
	}
	var rest []error
	for _, e := range leaves(err) {
		var te *engine.TapeError
		if !errors.As(e, &te) {
			rest = append(rest, e)
		}
	}
	if len(rest) == 0 {
		return nil
	}
	return errors.Join(append(rest, unreadable(res))...)
}

// leaves flattens errors.Join trees into their members.
func leaves(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// finishRun prints the outcome and passes the agent's exit code on. A tape
// that does not read back is exit 3, ahead of the agent's own code; an
// interrupted booth run is exit 130, a booth that refused entries exit 8,
// and a tripped breaker exit 7, in that order between the two.
func finishRun(env *Env, res *engine.Result, asJSON bool, line string) error {
	if asJSON {
		if err := writeJSON(env.Stdout, res); err != nil {
			return err
		}
	} else if res.Unreadable == "" {
		fmt.Fprintf(env.Stderr, "jukebox: %s (agent %s)\n", line, engine.EndText(res.End))
	}
	if err := unreadable(res); err != nil {
		return err
	}
	if err := interruptedExit(res); err != nil {
		return err
	}
	if err := refusedExit(res); err != nil {
		return err
	}
	if err := tripExit(res); err != nil {
		return err
	}
	if res.End.ExitCode != 0 {
		return withCode(res.End.ExitCode, errSilent)
	}
	return nil
}

// unreadable is the error for a run whose tape does not read back, or nil.
func unreadable(res *engine.Result) error {
	if res.Unreadable == "" {
		return nil
	}
	outcome := "agent " + engine.EndText(res.End)
	if d := res.Divergence; d != nil {
		outcome += fmt.Sprintf("; it diverged from the tape at frame %d", d.Frame)
	}
	next := fmt.Sprintf("`jukebox verify %s` says more; `jukebox recover %[1]s -o OUT` keeps what reads", termtext.ShellQuote(res.Tape))
	if _, err := os.Stat(res.Tape); err != nil {
		next = "the tape is gone (did the agent delete it?)"
	} else if res.Replaced {
		next = "what is there is another tape (did the agent put it there?): the agent can reach the tape's folder unless it runs in the booth (--booth keeps the tape read-only to it)"
	}
	return withCode(ExitBadTape, fmt.Errorf("the tape does not read back: %s\n"+
		"jukebox: the run itself ended (%s); exit 3 because its record cannot be trusted.\n"+
		"jukebox: %s", res.Unreadable, outcome, next))
}

func syncPolicy(s string) tapefmt.SyncPolicy {
	switch s {
	case "never":
		return tapefmt.SyncNever
	case "frame":
		return tapefmt.SyncFrame
	}
	return tapefmt.SyncStep
}

// tapeName is a recorded run's name, or its command's when it has none.
func tapeName(start *tapefmt.RunStart) string {
	if start.Name != "" {
		return start.Name
	}
	return runName(start.Argv)
}

// commandAfterTape refuses an agent's command given to a command that
// takes a tape first (replay, fork) without the "--" before it: a glob
// that matched two tapes ran the second as the agent, and flags after it
// went to the agent unread (--strict dropped in silence).
func commandAfterTape(tape string, argv []string) error {
	if len(argv) == 0 || argv[0] == "--" {
		return nil
	}
	if strings.HasSuffix(argv[0], tapestore.TapeExt) {
		return fmt.Errorf("%s: one tape, and %s is a second (a glob that matched more than one?): name the tape, "+
			"and put the agent's command after --", tape, argv[0])
	}
	return fmt.Errorf("%s: the agent's command goes after -- (%s -- %s); flags after it would be the agent's",
		argv[0], tape, strings.Join(argv, " "))
}

// commandArgs drops the "--" that kong passes through ahead of the command.
func commandArgs(argv []string) []string {
	if len(argv) > 0 && argv[0] == "--" {
		return argv[1:]
	}
	return argv
}

// runName is the script's name for interpreters ("python agent.py" is
// "agent"), else the command's ("sh -c '...'" is "sh": inline code is not
// a name). It is cut to what is safe in a file name.
func runName(argv []string) string {
	name := filepath.Base(argv[0])
	for _, a := range argv[1:] {
		if a == "-c" || a == "-e" {
			break // the next argument is code
		}
		if !strings.HasPrefix(a, "-") {
			if ext := filepath.Ext(a); ext != "" && !strings.ContainsAny(a, " \t\n;|&$`'\"(){}<>") {
				name = filepath.Base(a)
			}
			break
		}
	}
	return safeName(strings.TrimSuffix(name, filepath.Ext(name)))
}

// safeName keeps letters, digits, '.', '_' and '-' (others become '_'),
// at most 64 bytes, never empty.
func safeName(s string) string {
	b := []byte(s)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "run" + string(b)
	}
	return string(b)
}

// tapePath is the output path, or ./tapes/<name>-<time>.jbx with the folder made.
func tapePath(out, name string) (string, error) { return tapeIn(out, "tapes", name) }

// tapeIn is out, or a new tape's path in dir (made if missing) named after
// the run and the time.
func tapeIn(out, dir, name string) (string, error) {
	if out != "" {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%s.jbx", fileStem(name), time.Now().Format("20060102-150405.000"))), nil
}

// fileStem is a run's name made a file name in the folder it is joined
// to: a name comes from --name, or from a tape (a fork's or a replay's
// of a tape someone sent), where "../../x" walked out of ./tapes. Path
// separators and control characters become "-", leading dots go, and
// the name is cut at 120 bytes (a file name's limit is 255).
func fileStem(name string) string {
	b := []byte(strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '-'
		}
		return r
	}, name))
	if len(b) > 120 {
		b = b[:120]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
	}
	if stem := strings.TrimLeft(string(b), "."); stem != "" {
		return stem
	}
	return "run"
}
