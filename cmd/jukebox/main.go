// Command jukebox is a flight recorder, time-travel debugger and transactional
// sandbox for AI agents. See README.md for the tour and docs/ for the manual.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/jukebox-os/jukebox/internal/kong"
	"github.com/jukebox-os/jukebox/internal/termquiet"
	"github.com/jukebox-os/jukebox/internal/termtext"

	"github.com/jukebox-os/jukebox/prices"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.2.0-dev"

// Globals are the flags every command shares.
type Globals struct {
	Version       kong.VersionFlag `help:"Print the version and exit."`
	Prices        string           `type:"existingfile" env:"JUKEBOX_PRICES" placeholder:"FILE" help:"Model prices in LiteLLM's format (model_prices_and_context_window.json, dollars per token): its models override or extend the built-in table for every cost jukebox shows or limits."`
	PricesReplace bool             `env:"JUKEBOX_PRICES_REPLACE" help:"With --prices: use the file's models alone, not the built-in table as well."`
	NoCache       bool             `env:"JUKEBOX_NO_CACHE" help:"Keep nothing of a tape named by a store URL in the cache (JUKEBOX_CACHE_DIR, else the user's cache folder): what is read stays in memory, and a tape fetched whole (replay, fork, pack) goes to a temporary folder removed when the command ends. Compiled WASI tools (booth exec) stay in memory too, and the roots of the run's CA bundle are read again (docs/recording.md)."`
}

// AfterApply loads --prices before any command prices a call.
func (g *Globals) AfterApply() error {
	if g.Prices == "" {
		if g.PricesReplace {
			return fmt.Errorf("--prices-replace needs --prices FILE")
		}
		return nil
	}
	if err := prices.Load(g.Prices, g.PricesReplace); err != nil {
		return fmt.Errorf("--prices %w", err)
	}
	// The jukebox processes a command starts (bisect's forks, test's
	// replays, an agent's jukebox mcp) price alike.
	if abs, err := filepath.Abs(g.Prices); err == nil {
		os.Setenv("JUKEBOX_PRICES", abs)
	}
	if g.PricesReplace {
		os.Setenv("JUKEBOX_PRICES_REPLACE", "1")
	}
	return nil
}

// CLI is the whole command line; each command lives in its own file.
type CLI struct {
	Globals

	Play      PlayCmd      `cmd:"" help:"Open the turntable: scrub a tape frame by frame, fork from any frame, diff two timelines."`
	Demo      DemoCmd      `cmd:"" help:"Record the bundled agent against the scripted model, offline, to see the whole flow."`
	Record    RecordCmd    `cmd:"" help:"Run an agent and record every model call, its output and exit onto a tape."`
	Replay    ReplayCmd    `cmd:"" help:"Run an agent again offline, answering every model call from a tape."`
	Test      TestCmd      `cmd:"" help:"Replay folders of tapes as regression tests: each strictly, in parallel; a summary table, --junit, --json."`
	Bisect    BisectCmd    `cmd:"" help:"Find the step where a run went wrong: TAPE --check CMD --model M (or another change) forks the run at its model calls and binary-searches for the last one the change still rescues, the point of no return; --good A --bad B names the first step where two runs decided differently (tool, arguments, final answer)."`
	Fork      ForkCmd      `cmd:"" help:"Drop the needle on a frame: change the model or prompt there and resume live; earlier calls come from the tape."`
	Diff      DiffCmd      `cmd:"" help:"Align two timelines (a run and its fork, or any two tapes) and show how they differ, from the first divergence on."`
	Pack      PackCmd      `cmd:"" help:"Copy a fork's parent prefix into one self-contained tape, for a bug report."`
	Ls        LsCmd        `cmd:"" help:"List the recordings in a folder, or in a store (s3://BUCKET/PREFIX/ and the like)."`
	Push      PushCmd      `cmd:"" help:"Upload tapes to a store (S3 and compatibles, GCS, Azure, a folder): those not uploaded yet; safe to run from cron."`
	Pull      PullCmd      `cmd:"" help:"Download a tape, or every tape, from a store, each verified whole."`
	Reindex   ReindexCmd   `cmd:"" help:"Write a store's index (what ls and the fork list read) from every tape's summary object: for a store whose tapes an earlier jukebox or another tool uploaded."`
	Cache     CacheCmd     `cmd:"" help:"What the cache of store tapes holds (info), and emptying it down to a size (prune); JUKEBOX_CACHE_MAX bounds it."`
	Cost      CostCmd      `cmd:"" help:"Print what a run cost, from its tape: by model with the rates used, by agent or by step."`
	Rules     RulesCmd     `cmd:"" help:"Show the matching rules a replay of a tape uses (recorded in it, kept beside it, the defaults); --clear removes those beside it."`
	Breaker   BreakerCmd   `cmd:"" help:"Run a recorded tape through circuit breaker limits: would it have tripped, where and why (exit 7 if so)."`
	Export    ExportCmd    `cmd:"" help:"Send tapes to OpenTelemetry (otlp), or write them as an HTTP Archive (har) or JSON (json), for other tools."`
	Checkout  CheckoutCmd  `cmd:"" help:"Write a booth run's workspace as it stood at a frame into a folder (from the tape's snapshot and step records)."`
	Show      ShowCmd      `cmd:"" help:"Print the frames of a tape."`
	Verify    VerifyCmd    `cmd:"" help:"Check CRCs, the hash chain, every blob and (with --key-file) the seal."`
	Recover   RecoverCmd   `cmd:"" help:"Rewrite a torn tape (a crash left it without its footer) as a whole one, up to its last whole step."`
	Seal      SealCmd      `cmd:"" help:"Seal a tape with a keyed BLAKE2b MAC over its chain head."`
	Booth     BoothCmd     `cmd:"" help:"Inspect, commit or roll back a Shadow Booth transaction; run WASI tools in it."`
	Doctor    DoctorCmd    `cmd:"" help:"Print what this machine supports: namespaces, overlayfs, reflinks, WASI."`
	Mcp       McpCmd       `cmd:"" name:"mcp" help:"Stand in for an MCP server (stdio): relay, record and replay its session (jukebox mcp -- SERVER-CMD, where the agent started the server); jukebox mcp wrap routes a config through it."`
	Serve     ServeCmd     `cmd:"" help:"Record a process that is already running (the Python SDK starts it): the control API and the model proxy, until its standard input closes."`
	DemoModel DemoModelCmd `cmd:"" name:"demo-model" help:"Serve the scripted OpenAI/Anthropic-compatible model (offline demo and tests)."`
}

// Env is what commands get instead of touching os.Stdout and friends, so the
// CLI can be tested with captured writers.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Stdin  io.Reader
	// Signals are the signals main catches, for a command that runs an
	// agent to hand to the engine, which forwards them to the agent. Nil
	// (in tests) forwards nothing.
	Signals <-chan os.Signal
	// NoCache is --no-cache: tapes from a store go to a temporary folder;
	// cleanups remove such folders when the command ends (store.go).
	NoCache  bool
	cleanups []func()
	// named are the store URLs of tapes fetched to a local path (tape),
	// by that path.
	named map[string]string
}

// sourceName is the tape at path as the user named it: the store URL it
// was fetched from, else path.
func (env *Env) sourceName(path string) string {
	if u, ok := env.named[path]; ok {
		return u
	}
	return path
}

// remote opens a store's tape by its URL, in place: what every command
// that reads tapes hands tapefmt.OpenWith (or the engine, the turntable).
func (env *Env) remote() tapefmt.RemoteOpener { return tapestore.Opener(env.NoCache) }

// openTape opens the tape at path, or the store's tape a URL names.
func (env *Env) openTape(path string) (*tapefmt.Tape, error) {
	return tapefmt.OpenWith(path, env.remote())
}

func main() {
	// TERM as it was, hidden from package initialisation (termquiet):
	// first, before anything reads it or starts a process.
	termquiet.Restore()
	quietLibraries()
	// When jukebox re-executes itself as the booth's namespace init, this
	// runs the child and exits; otherwise it returns at once.
	sandbox.MaybeRunInit()
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Stdin: os.Stdin}
	if versionOnly(os.Args[1:]) {
		// Nothing to stop: catching signals starts a thread, a third of
		// the time the version takes past the process's own start.
		os.Exit(run(context.Background(), os.Args[1:], env))
	}
	// The one signal-aware context: commands get it through kong. It is
	// not stopped: os.Exit ends it, where stopping would wait on the
	// goroutine that delivers signals.
	ctx, sigs, _ := notifySignals(context.Background())
	env.Signals = sigs
	os.Exit(run(ctx, os.Args[1:], env))
}

// quietLibraries silences the standard logger, which jukebox never
// writes to: a library that logs with it wrote its own lines into
// jukebox's stderr (the S3 transfer manager's "failed to complete
// multipart upload for upload ID 0xc01a...: ... 412" when two pushes
// raced, each of which jukebox reports in its own words).
func quietLibraries() { log.SetOutput(io.Discard) }

// versionOnly says args are --version alone, answered without kong.
func versionOnly(args []string) bool { return len(args) == 1 && args[0] == "--version" }

// run parses args, runs the command with ctx (bound for commands that take
// a context.Context) and maps its error to an exit code. It is the one
// place that knows exit codes.
func run(ctx context.Context, args []string, env *Env) int {
	if versionOnly(args) {
		// The version alone needs no model of every command and flag,
		// which kong builds by reflection in milliseconds.
		fmt.Fprintln(env.Stdout, version)
		return ExitOK
	}
	parser, err := kong.New(commandLine(args),
		kong.Name("jukebox"),
		kong.Description("Record, replay, fork and sandbox AI agent runs."),
		kong.UsageOnError(),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Vars{"version": version},
		kong.Bind(env),
		withContext(ctx),
		withUpstreams(),
		withTapes(),
		kong.Exit(func(code int) { panic(exitPanic(code)) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintf(env.Stderr, "jukebox: %v\n", err)
		return ExitInternal
	}
	return parseAndRun(parser, args, env)
}

// withContext binds ctx for the commands whose Run takes a context.Context.
func withContext(ctx context.Context) kong.Option {
	return kong.BindTo(ctx, (*context.Context)(nil))
}

// exitPanic carries an exit code out of kong's help and version flags.
type exitPanic int

func parseAndRun(parser *kong.Kong, args []string, env *Env) (code int) {
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(env.Stderr, "jukebox: %s\n", termtext.Sanitize(inFlagWords(err).Error())) // it may name a file
		usageHint(env.Stderr, err)
		return ExitUsage
	}
	if g, ok := parser.Model.Target.Addr().Interface().(interface{ globals() *Globals }); ok {
		env.NoCache = g.globals().NoCache
	}
	if env.NoCache && os.Getenv("JUKEBOX_NO_CACHE") == "" {
		// The flag is the variable: what reads the setting where the
		// command's options do not reach (compiled WASI tools, the kept
		// roots of the CA bundle) reads the variable, for this command.
		os.Setenv("JUKEBOX_NO_CACHE", "1")
		env.cleanups = append(env.cleanups, func() { os.Unsetenv("JUKEBOX_NO_CACHE") })
	}
	defer func() {
		for _, c := range env.cleanups {
			c()
		}
		env.cleanups = nil
	}()
	if err := ctx.Run(); err != nil {
		return report(env.Stderr, err)
	}
	return ExitOK
}

// usageHint follows a command line kong refused with the usage of the
// command it was for (its arguments and required flags) and where its
// help is: `expected "<tape>"` alone does not say what a tape is.
func usageHint(w io.Writer, err error) {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil {
		return
	}
	n := pe.Context.Selected()
	if n == nil {
		return // no command: kong's message lists them
	}
	fmt.Fprintf(w, "usage: jukebox %s\n`%s --help` says more\n", n.Summary(), n.FullPath())
}

// globals gives parseAndRun the flags every command shares.
func (c *CLI) globals() *Globals { return &c.Globals }
