package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// ForkCmd drops the needle on a frame and resumes live from there.
type ForkCmd struct {
	Tape             string              `arg:"" type:"tape" help:"The parent tape (a file, or a tape in a store)."`
	Cmd              []string            `arg:"" optional:"" passthrough:"partial" name:"command" help:"The agent to run, after -- (default: the parent's recorded command)."`
	Frame            uint64              `required:"" help:"Fork at this frame: the first model call at or after it gets the overrides and goes live; earlier calls are answered from the parent."`
	Model            []string            `help:"Model from the fork frame on; several (comma-separated) fork once per model."`
	Once             bool                `help:"Apply the overrides to the call at the fork frame only; by default they apply to it and to every later call to the same endpoint (the rest of the run uses the new model or prompt)."`
	Set              []string            `sep:"none" placeholder:"PATH=VALUE" help:"Rewrite a field of the request at the fork frame by path, e.g. messages.3.content='the tool returned this' or messages.3.content='{\"ok\": false}': VALUE is JSON when it parses, else a string. A path the request lacks is an error. Repeatable."`
	SetFile          string              `type:"existingfile" placeholder:"FILE" help:"Fields to rewrite as --set does, from a JSON object of paths to values."`
	SystemPromptFile string              `type:"existingfile" placeholder:"FILE" help:"Replace the system prompt with this file's text (its final newline, which editors add, left out)."`
	Temperature      *float64            `help:"Set the temperature."`
	Patch            string              `placeholder:"JSON" help:"A JSON merge patch (RFC 7396) applied to the request body last, e.g. '{\"max_tokens\": 50}'."`
	Output           string              `short:"o" type:"path" placeholder:"FILE" help:"Fork tape (default ./tapes/<name>-fork-<model>-<time>.jbx, the model as --model gives it, none without; with several models, -o needs {model} in the name)."`
	Name             string              `placeholder:"NAME" help:"Name the fork: its run's name (the turntable's b lists it so) and its tape's, ./tapes/NAME-<model>-<time>.jbx unless -o (the model as --model gives it, none without)."`
	Upstream         upstreams           `placeholder:"NAME=URL" help:"Where live calls go, as in record."`
	MCPURL           []string            `name:"mcp-url" placeholder:"NAME=URL" help:"The URL of an HTTP MCP server the parent's run was given (record --mcp-url), for the fork's live calls to it: the tape keeps it without the credentials in its query. Repeatable."`
	Dir              string              `type:"path" help:"Working directory (default: the parent's, when it still exists; else the current one). With --workspace start, the folder the start is written into (empty or missing)."`
	Workspace        string              `enum:"recorded,start" default:"recorded" help:"What the fork's agent starts in: recorded (the recorded folder as it is now, or --dir), or start (the workspace as the run started, rebuilt from the tape's snapshot into --dir or a new folder, so the calls before the fork frame meet the files they met; record with --booth --snapshot)."`
	NoBooth          bool                `help:"Run outside the Shadow Booth: the agent's re-executed and new side effects touch the real workspace."`
	Commit           engine.CommitPolicy `enum:"ask,on-success,always,never" default:"never" help:"What to do with the fork's staged changes: never (default: roll back), ask, on-success or always."`
	BoothMode        string              `name:"booth-mode" enum:"auto,overlay,reflink,copy" default:"auto" help:"Staging mode of the fork's booth, as record --booth-mode: auto runs the agent confined or refuses to start it (exit 2); copy runs it unconfined, on purpose."`
	Keep             bool                `help:"Leave the booth transaction open (jukebox booth diff|commit|rollback)."`
	PG               string              `name:"pg" placeholder:"DSN" help:"The agent's PostgreSQL work joins the fork's booth, as with record --booth --pg."`
	JSON             bool                `help:"Print the results as JSON on stdout (the agent's own stdout then goes to stderr)."`
	QuietSDKs        bool                `name:"quiet-sdks" default:"true" negatable:"" help:"Switch off the SDKs' own traces and telemetry in the agent's environment, as replay does; --no-quiet-sdks leaves the environment as it is."`
	matchFlags
	rememberFlag
	liveFlags
	redactFlags
	captureFlags
	breakerFlags
	otlpFlags
	storeFlags
	tagFlags
}

// Validate checks flags before anything starts.
func (c *ForkCmd) Validate() error {
	if err := commandAfterTape(c.Tape, c.Cmd); err != nil {
		return err
	}
	if c.Workspace != "start" { // there, --dir may be a folder to make
		if err := agentDirFlag(c.Dir); err != nil {
			return err
		}
	}
	if _, err := c.tags(); err != nil {
		return err
	}
	if _, err := mcpURLs(c.MCPURL); err != nil {
		return err
	}
	if _, err := engine.ForkName(c.Name); err != nil {
		return fmt.Errorf("--name: %w", err)
	}
	if err := c.matchFlags.validate(); err != nil {
		return err
	}
	if _, err := c.liveHosts(); err != nil {
		return err
	}
	if err := c.captureFlags.validate(); err != nil {
		return err
	}
	if err := c.redactFlags.validate(); err != nil {
		return err
	}
	if err := c.breakerFlags.validate(); err != nil {
		return err
	}
	if err := c.otlpFlags.validate(); err != nil {
		return err
	}
	if err := c.storeFlags.validate(); err != nil {
		return err
	}
	if _, err := c.fieldSets(); err != nil {
		return err
	}
	if c.Patch != "" && !json.Valid([]byte(c.Patch)) {
		return fmt.Errorf("--patch is not valid JSON: %s", c.Patch)
	}
	if len(c.Model) > 1 && c.Output != "" && !strings.Contains(c.Output, "{model}") {
		return fmt.Errorf("-o with several models needs {model} in the name, e.g. -o fork-{model}.jbx")
	}
	if err := c.booth().validatePG(); err != nil {
		return err
	}
	if c.NoBooth && c.BoothMode != "" && c.BoothMode != "auto" {
		return fmt.Errorf("--booth-mode applies to the booth; --no-booth runs outside it")
	}
	if !c.NoBooth {
		// No silent fallback: outside the booth the fork's side effects
		// reach the real workspace, so that must be asked for.
		if err := boothUnavailable("fork runs in it by default: pass --no-booth to fork outside it (the agent's writes then reach the workspace)"); err != nil {
			return err
		}
		return boothKeyPlace("pass --no-booth to fork outside the booth (the agent's writes then reach the workspace)")
	}
	return nil
}

// forkRow is one fork's outcome.
type forkRow struct {
	Model string `json:"model,omitempty"`
	*engine.Result
}

// Run forks once per model (or once) and reports each.
func (c *ForkCmd) Run(ctx context.Context, env *Env) error {
	var err error
	if c.Tape, err = env.tape(ctx, c.Tape); err != nil {
		return err
	}
	over, err := c.overrides()
	if err != nil {
		return withCode(ExitUsage, err)
	}
	models := c.Model
	if len(models) == 0 {
		models = []string{""}
	}
	start, err := parentStart(env.remote(), c.Tape, env.Stderr)
	if err != nil {
		return err
	}
	if err := refuseHarness(c.Tape, start, c.Cmd); err != nil {
		return err
	}
	rules, err := c.rules(c.Tape, false, env.Stderr)
	if err != nil {
		return err
	}
	if c.Workspace == "start" && c.Dir != "" && len(models) > 1 {
		return withCode(ExitUsage, errors.New("--workspace start with several models rebuilds a folder for each: leave --dir out"))
	}
	var rows []forkRow
	made := c.Workspace == "start" && c.Dir == "" // a folder of jukebox's for each fork
	for _, m := range models {
		if c.Workspace == "start" {
			dir, err := c.startWorkspace(env)
			if err != nil {
				return err
			}
			c.Dir = dir
		}
		res, err := c.forkOne(ctx, env, start, over, m, rules)
		if made {
			c.settleStart(env, res)
		}
		if len(rows) == 0 {
			c.remember(c.RememberRules, c.Tape, err, env.Stderr)
		}
		if err := runFailed(err, res); err != nil {
			return err
		}
		networkNotes(env.Stderr, res, true) // the calls before the fork frame are the parent's
		for _, p := range slices.Sorted(maps.Keys(res.UpstreamFromTape)) {
			fmt.Fprintf(env.Stderr, "jukebox: the live %s calls went to %s, the upstream the tape was recorded against (--upstream %s=URL sends them elsewhere)\n", p, res.UpstreamFromTape[p], p)
		}
		rows = append(rows, forkRow{Model: m, Result: res})
	}
	return c.report(env, rows)
}

func (c *ForkCmd) forkOne(ctx context.Context, env *Env, start *tapefmt.RunStart, over engine.Overrides, model string, rules *reqmatch.Rules) (*engine.Result, error) {
	if model != "" {
		over.Model = model
	}
	var err error
	name := tapeName(start)
	stem := name + "-fork"
	if c.Name != "" {
		name, stem = c.Name, c.Name
	}
	out := strings.ReplaceAll(c.Output, "{model}", model)
	if out == "" {
		if out, err = tapePath("", stem+suffix(model)); err != nil {
			return nil, err
		}
	}
	if err := c.booth().checkStreams(env); err != nil {
		return nil, err
	}
	o := runOptions(env, c.Cmd, name, 0, c.JSON)
	o.SourceName = env.sourceName(c.Tape)
	if o.MCP, err = mcpURLs(c.MCPURL); err != nil {
		return nil, err
	}
	c.captureFlags.apply(&o)
	if o.Redact, err = c.patterns(); err != nil {
		return nil, err
	}
	if o.Tags, err = c.tags(); err != nil {
		return nil, err
	}
	if o.Limits, err = c.limits(name); err != nil {
		return nil, err
	}
	o.Dir, o.AutoName, o.QuietSDKs = c.workdir(start.Cwd), c.Output == "", c.QuietSDKs
	hosts, err := c.liveHosts()
	if err != nil {
		return nil, err
	}
	bf := c.booth()
	var tty *ttyGuard
	o.Booth, tty = bf.boothOptions(env)
	defer tty.restore()
	exported, err := c.otlpFlags.start(ctx, &o, env.Stderr)
	if err != nil {
		return nil, err
	}
	pg, err := startPG(ctx, c.PG, o.Booth, env)
	if err != nil {
		return nil, err
	}
	defer pg.close()
	if err := c.checkStore(ctx, env.Stderr); err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Stderr, "jukebox: forking %s at frame %d%s\n", c.Tape, c.Frame, modelNote(model))
	o.Starting = func() { announceRecorded(env.Stderr, c.Cmd, start) }
	res, err := engine.Fork(agentContext(ctx), engine.ForkOptions{RunOptions: o, Parent: c.Tape, Remote: env.remote(), Frame: c.Frame,
		Overrides: over, Tape: out, Upstreams: c.Upstream, Rules: rules, LiveHosts: hosts})
	if res != nil {
		printBooth(env, res.Booth)
		c.upload(ctx, env.Stderr, res.Tape)
	}
	exported(res)
	return res, err
}

func modelNote(model string) string {
	if model == "" {
		return ""
	}
	return " with model " + model
}

func suffix(model string) string {
	if model == "" {
		return ""
	}
	return "-" + model
}

// startWorkspace writes the workspace as the parent run started into
// --dir (made when missing, refused when not empty) or a new folder, and
// returns it. A start the tape cannot rebuild (no snapshot, and the
// recorded folder gone or changed where the tape cannot tell) is refused,
// naming what is missing.
func (c *ForkCmd) startWorkspace(env *Env) (string, error) {
	t, err := env.openTape(c.Tape)
	if err != nil {
		return "", err
	}
	defer t.Close()
	ws, err := timeline.WorkspaceOf(t, c.Tape, 0)
	if err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("--workspace start: %s: %w", c.Tape, err))
	}
	if missing := ws.Missing(); len(missing) > 0 || ws.FolderGone {
		why := fmt.Sprintf("the recorded folder %s is gone", termtext.Quote(ws.Folder))
		if len(missing) > 0 {
			why = fmt.Sprintf("%d paths cannot be rebuilt (%s: %s)", len(missing), termtext.Quote(missing[0].Path), missing[0].Why)
		}
		return "", withCode(ExitUsage, fmt.Errorf("--workspace start: %s: %s, and the tape has no snapshot of the start (record with --booth --snapshot)", c.Tape, why))
	}
	dir := c.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "jukebox-fork-start-"); err != nil {
			return "", err
		}
	} else if err := emptyFolder(dir, false, ""); err != nil {
		return "", withCode(ExitUsage, fmt.Errorf("--workspace start: %w", err))
	}
	n, err := ws.WriteTo(dir)
	if err != nil {
		return "", fmt.Errorf("--workspace start: writing the start into %s: %w", dir, err)
	}
	from := "the snapshot on the tape"
	if !ws.Snapshot {
		from = "the recorded folder " + termtext.Quote(ws.Folder) + " as it is now (the tape has no snapshot: files the run changed and the booth committed are not as they started)"
	}
	fmt.Fprintf(env.Stderr, "jukebox: the fork runs in %s: the workspace as the run started, %d paths from %s\n", termtext.Quote(dir), n, from)
	return dir, nil
}

// settleStart removes the folder --workspace start made for a fork (in
// the temporary folder) when the fork wrote nothing there: it was refused
// before it ran, or its booth rolled back. A refused or rolled-back fork
// left it behind, holding the start alone. A fork that committed, kept
// its transaction open, or ran outside the booth keeps it, and says so.
func (c *ForkCmd) settleStart(env *Env, res *engine.Result) {
	if res.LeftWorkspace() {
		fmt.Fprintf(env.Stderr, "jukebox: the fork's folder stays: %s\n", termtext.Quote(c.Dir))
		return
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		fmt.Fprintf(env.Stderr, "jukebox: warning: the fork's folder %s stays: %v\n", termtext.Quote(c.Dir), err)
	}
}

func (c *ForkCmd) workdir(parentCwd string) string {
	if c.Dir != "" {
		return c.Dir
	}
	if st, err := os.Stat(parentCwd); err == nil && st.IsDir() {
		return parentCwd
	}
	return ""
}

func (c *ForkCmd) overrides() (engine.Overrides, error) {
	o := engine.Overrides{Temperature: c.Temperature, Scope: engine.ScopeAll}
	if c.Once {
		o.Scope = engine.ScopeOnce
	}
	if c.Patch != "" {
		o.Patch = json.RawMessage(c.Patch)
	}
	set, err := c.fieldSets()
	if err != nil {
		return o, err
	}
	o.Set = set
	if c.SystemPromptFile != "" {
		b, err := os.ReadFile(c.SystemPromptFile)
		if err != nil {
			return o, err
		}
		// A text file's last line ends in a newline, which every editor
		// adds; it is not part of the prompt (nor is a CR before it).
		s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		o.SystemPrompt = &s
	}
	return o, nil
}

// fieldSets are --set-file's fields, in path order, then --set's.
func (c *ForkCmd) fieldSets() ([]engine.FieldSet, error) {
	var out []engine.FieldSet
	if c.SetFile != "" {
		b, err := os.ReadFile(c.SetFile)
		if err != nil {
			return nil, fmt.Errorf("--set-file: %w", err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return nil, fmt.Errorf("--set-file %s: not a JSON object of paths to values: %w", c.SetFile, err)
		}
		for _, p := range slices.Sorted(maps.Keys(fields)) {
			out = append(out, engine.FieldSet{Path: p, Value: fields[p]})
		}
	}
	for _, s := range c.Set {
		path, value, ok := strings.Cut(s, "=")
		if !ok || path == "" {
			return nil, fmt.Errorf("--set %q: want PATH=VALUE, e.g. messages.3.content=done", s)
		}
		raw := json.RawMessage(value)
		if !json.Valid(raw) {
			raw, _ = json.Marshal(value) // a string
		}
		out = append(out, engine.FieldSet{Path: path, Value: raw})
	}
	for _, f := range out {
		if _, err := reqmatch.ParsePath(f.Path); err != nil {
			return nil, fmt.Errorf("--set %s: %w", f.Path, err)
		}
	}
	return out, nil
}

func (c *ForkCmd) report(env *Env, rows []forkRow) error {
	if c.JSON {
		if err := writeJSON(env.Stdout, rows); err != nil {
			return err
		}
	} else {
		tw := table(env.Stderr)
		fmt.Fprintln(tw, "MODEL\tTAPE\tCALLS\tFRAMES\tAGENT\tDIVERGED")
		for _, r := range rows {
			div := "-"
			if r.Divergence != nil {
				div = r.Divergence.Where()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", orDash(r.Model), filepath.Base(r.Tape), r.Calls, r.Frames, engine.EndText(r.End), div)
		}
		tw.Flush()
	}
	for _, r := range rows {
		if err := unreadable(r.Result); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.Divergence != nil {
			return withCode(ExitDiverged, r.Divergence)
		}
	}
	for _, r := range rows {
		if err := tripExit(r.Result); err != nil {
			return err
		}
	}
	for _, r := range rows {
		if r.End.ExitCode != 0 {
			return withCode(r.End.ExitCode, errSilent)
		}
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parentStart is the run.start of the tape at path; a torn tape is said so
// on warn, when warn is not nil.
func parentStart(remote tapefmt.RemoteOpener, path string, warn io.Writer) (*tapefmt.RunStart, error) {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if rec := t.Recovered(); rec != nil && warn != nil {
		fmt.Fprintf(warn, "warning: %s: %s\n", path, recoveryText(rec))
	}
	start, err := engine.FirstRunStart(t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return start, nil
}
