package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
)

// ServeCmd records a process that is already running: the Python SDK
// starts it for an agent that runs on its own, outside jukebox record.
type ServeCmd struct {
	Name     string        `help:"Run name (a track's name: the breaker config's tracks apply). Default: the command's name, else serve."`
	TapeDir  string        `name:"tape-dir" type:"path" default:"tapes" placeholder:"DIR" help:"Folder for the tape, named <name>-<time>.jbx (made if missing)."`
	Output   string        `short:"o" type:"path" placeholder:"FILE" help:"Tape to write, instead of one in --tape-dir. Never overwritten."`
	Upstream upstreams     `placeholder:"NAME=URL" help:"Send a provider's calls elsewhere, as record does. Default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL of serve's environment, else the public API."`
	Seed     int64         `help:"Seed for the served process (JUKEBOX_SEED in the printed environment; default: random, recorded)."`
	Sync     string        `enum:"step,never,frame" default:"step" help:"When to fsync the tape: step (the default) hands each step to the OS as it ends and fsyncs in the background at most every 100 ms; frame fsyncs every frame; never leaves it to the OS."`
	Socket   string        `type:"path" placeholder:"FILE" help:"Serve run after run on this Unix socket (the Python SDK's reused server): each connection asks for one with a JSON line {name, argv}. Exits after --idle without one."`
	Idle     time.Duration `default:"10m" help:"With --socket: exit after this long without a run."`
	redactFlags
	breakerFlags
	Cmd []string `arg:"" optional:"" passthrough:"partial" name:"command" help:"The served process's command line, after --, for the tape (nothing is started)."`
}

// Validate checks flags before anything starts.
func (c *ServeCmd) Validate() error {
	if err := c.redactFlags.validate(); err != nil {
		return err
	}
	return c.breakerFlags.validate()
}

// Run serves until standard input closes (the process that started serve
// ended, or closed its end of the pipe), an interrupt, or the served
// process ends the run through the control API. Standard output gets one
// JSON line when serving starts: the tape, its id, the seed and the
// environment the served process must set.
func (c *ServeCmd) Run(ctx context.Context, env *Env) error {
	catchBrokenPipe() // its runs end and their tapes close when the process that read its first line has gone
	if c.Socket != "" {
		return c.pool(ctx, env)
	}
	ctx, stop := untilSignal(ctx, env)
	defer stop(nil)
	go func() {
		io.Copy(io.Discard, env.Stdin)
		stop(errors.New("the served process closed serve's standard input without ending the run"))
	}()
	return c.serveOne(ctx, c.Name, commandArgs(c.Cmd), env.Stdout, env.Stderr)
}

// serveOne records one served run until ctx is done or the run is ended
// through the control API, printing the ready line to stdout.
func (c *ServeCmd) serveOne(ctx context.Context, name string, argv []string, stdout, stderr io.Writer) error {
	switch {
	case name != "":
	case len(argv) > 0:
		name = runName(argv)
	default:
		name = "serve"
	}
	path, err := tapeIn(c.Output, c.TapeDir, name)
	if err != nil {
		return err
	}
	o := engine.RunOptions{Argv: argv, Seed: c.Seed, Name: name, Version: version, AutoName: c.Output == ""}
	if o.Redact, err = c.patterns(); err != nil {
		return err
	}
	if o.Limits, err = c.limits(name); err != nil {
		return err
	}
	res, err := engine.Serve(ctx, engine.ServeOptions{RunOptions: o, Tape: path, Upstreams: c.Upstream, Sync: syncPolicy(c.Sync),
		Ready: func(info engine.ServeInfo) {
			line, _ := json.Marshal(info)
			fmt.Fprintf(stdout, "%s\n", line)
			fmt.Fprintf(stderr, "jukebox: serving the control API at %s, recording to %s\n", info.Env["JUKEBOX_CONTROL"], info.Tape)
		}})
	if err := runFailed(err, res); err != nil {
		return err
	}
	if err := unreadable(res); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "jukebox: recorded %s%s, %d frames to %s\n", termtext.Count(int(res.Calls), "call", "calls"), refusedNote(res), res.Frames, res.Tape)
	return tripExit(res)
}

// untilSignal is ctx for a command that serves until it is interrupted
// (serve, mcp --url): done at the first signal main catches, which its
// cause names, or when stop is called.
func untilSignal(ctx context.Context, env *Env) (context.Context, context.CancelCauseFunc) {
	ctx, stop := context.WithCancelCause(ctx)
	if env.Signals != nil {
		go func() {
			select {
			case sig := <-env.Signals:
				stop(fmt.Errorf("interrupted by %v", sig))
			case <-ctx.Done():
			}
		}()
	}
	return ctx, stop
}
