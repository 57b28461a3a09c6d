package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// McpCmd holds the MCP commands: run (the default) and wrap.
type McpCmd struct {
	Run  McpRunCmd  `cmd:"" default:"withargs" help:"Stand in for an MCP server (stdio): relay, record and replay its session (the default: jukebox mcp [flags] -- SERVER-CMD ARGS)."`
	Wrap McpWrapCmd `cmd:"" help:"Route every stdio server of an mcpServers config file through jukebox mcp: print the new config, or write it with -i."`
}

// McpRunCmd stands in for an MCP server (stdio): the agent starts it where
// it started the server, and it relays, records and replays the session.
type McpRunCmd struct {
	Name       string   `help:"The server's name on the tape; a replay finds the session by it (default: the server command's base name)."`
	Output     string   `short:"o" type:"path" placeholder:"FILE" help:"On its own (not under jukebox record): the tape to write (default ./tapes/mcp-<name>-<time>.jbx)."`
	Policy     string   `type:"existingfile" placeholder:"FILE" env:"JUKEBOX_MCP_POLICY" help:"Booth policy for tools/call (JSON, see docs/mcp.md): run now, hold in the booth's outbox until the commit, or refuse, by server and tool; annotations count only for servers it trusts."`
	MaxMessage int      `name:"max-message" default:"16777216" placeholder:"BYTES" help:"Longest message recorded whole; a longer one is passed on and recorded cut, with a note."`
	URL        string   `name:"url" placeholder:"URL" help:"An MCP server that speaks streamable HTTP, at URL: jukebox mcp listens on --listen, prints its own URL (the same path) on stdout, and proxies, records and replays that server until it is interrupted."`
	Listen     string   `placeholder:"ADDR" default:"127.0.0.1:0" help:"With --url: where to listen (default a free port on 127.0.0.1)."`
	Cmd        []string `arg:"" optional:"" passthrough:"partial" name:"command" help:"The MCP server, after --, e.g. -- npx -y @modelcontextprotocol/server-filesystem ."`

	policy *mcp.Policy // read from Policy by Validate
}

// Validate needs a server command and a sane limit.
func (c *McpRunCmd) Validate() error {
	if c.Policy != "" {
		var err error
		if c.policy, err = mcp.LoadPolicy(c.Policy); err != nil {
			return fmt.Errorf("--policy %w", err)
		}
	}
	switch {
	case c.URL != "" && len(commandArgs(c.Cmd)) > 0:
		return errors.New("--url and a server command: give one (--url for a server that speaks HTTP, a command after -- for one that speaks stdio)")
	case c.URL != "":
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--url %q: want http://HOST[:PORT]/PATH or https://...", c.URL)
		}
	case len(commandArgs(c.Cmd)) == 0:
		return errors.New("no MCP server to run: give it after --, e.g. jukebox mcp -- npx -y @modelcontextprotocol/server-everything (or --url URL for one that speaks HTTP)")
	}
	if c.MaxMessage < 1024 {
		return fmt.Errorf("--max-message %d: at least 1024 bytes", c.MaxMessage)
	}
	return nil
}

// Run relays stdin and stdout to the server (or, in a replay, answers from
// the tape without starting it). Under jukebox record, replay or fork the
// session goes through the run's control API; on its own, jukebox mcp
// records a tape of its own. Nothing but the protocol goes to stdout.
func (c *McpRunCmd) Run(ctx context.Context, env *Env) error {
	argv := commandArgs(c.Cmd)
	upstream, _ := url.Parse(c.URL)
	if c.URL != "" {
		argv = []string{c.URL}
	}
	name := c.Name
	switch {
	case name != "":
	case c.URL != "":
		name = safeName(upstream.Hostname())
	default:
		name = safeName(filepath.Base(argv[0]))
	}
	ctl, finish, err := c.control(ctx, env, name, argv)
	if err != nil {
		return err
	}
	start, err := ctl.MCPStart(ctx, controlapi.MCPStart{Server: name, Argv: argv})
	if err != nil {
		return fmt.Errorf("mcp %s: %w", name, err)
	}
	if len(start.Policy) > 0 {
		// The run's --mcp-policy, over whatever this process's environment
		// says (an MCP client may pass it none of the run's variables, and
		// the agent sets it): a policy the user gave the run holds.
		if c.policy, err = mcp.ParsePolicy("the run's --mcp-policy", start.Policy); err != nil {
			return fmt.Errorf("mcp %s: %w", name, err)
		}
	}
	rec := recorder(ctx, ctl, name, start.Session, env.Stderr)
	live := func() bool { l, err := ctl.MCPLive(context.WithoutCancel(ctx)); return err == nil && l.Live }
	if c.URL != "" {
		o := mcp.HTTPOptions{Max: c.MaxMessage}
		if c.policy != nil {
			ro := c.policyOptions(context.WithoutCancel(ctx), ctl, name, start.Session, env.Stderr)
			o.Intercept, o.ServerSaw = ro.Intercept, ro.ServerSaw
		}
		var h http.Handler
		switch {
		case start.Replay && start.LiveLater: // a fork: from the tape up to the fork point, live from there
			h = mcp.NewHTTPFork(mcp.ReplayerOf(start.Messages), upstream, rec, live, o, func() {
				fmt.Fprintf(env.Stderr, "jukebox mcp: %s: live from here on\n", name)
			})
		case start.Replay:
			r := mcp.ReplayerOf(start.Messages)
			r.Diverged = func(method string, params []byte) {
				fmt.Fprintf(env.Stderr, "jukebox mcp: %s\n", mcp.DivergedText(name, method, params))
			}
			h = mcp.NewHTTPReplay(r, rec)
		default:
			h = mcp.NewHTTPProxy(upstream, rec, o)
		}
		err := c.serveHTTP(ctx, env, h, upstream.Path, ctl)
		if finish != nil {
			err = errors.Join(err, finish(0))
		}
		return err
	}
	if start.Replay {
		r := mcp.ReplayerOf(start.Messages)
		r.Diverged = func(method string, params []byte) {
			fmt.Fprintf(env.Stderr, "jukebox mcp: %s\n", mcp.DivergedText(name, method, params))
		}
		if !start.LiveLater {
			return r.Serve(env.Stdin, env.Stdout, rec)
		}
		// A fork: answered from the parent's session until the fork point
		// (or a request the parent never made), live from there on.
		client := bufio.NewReaderSize(env.Stdin, 64<<10)
		line, err := r.ServeUntilLive(client, env.Stdout, rec, live)
		if err != nil || line == nil {
			return err
		}
		fmt.Fprintf(env.Stderr, "jukebox mcp: %s: live from here on: the server starts now\n", name)
		env := *env
		env.Stdin = io.MultiReader(bytes.NewReader(line), client)
		exit, err := c.relayLive(ctx, &env, argv, rec, r, mcp.RelayOptions{})
		return exitErr(exit, err)
	}
	var opts mcp.RelayOptions
	if c.policy != nil {
		opts = c.policyOptions(context.WithoutCancel(ctx), ctl, name, start.Session, env.Stderr)
	}
	exit, err := c.relayLive(ctx, env, argv, rec, nil, opts)
	if finish != nil {
		err = errors.Join(err, finish(exit))
	}
	return exitErr(exit, err)
}

// serveHTTP serves h on --listen and prints its URL (path as the
// upstream's) on stdout until it is interrupted (SIGINT, SIGTERM) or ctx
// is done. Its input is not watched: a background job's is /dev/null.
func (c *McpRunCmd) serveHTTP(ctx context.Context, env *Env, h http.Handler, path string, ctl controlapi.Run) error {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", c.Listen, err)
	}
	// The agent reaches this listener through the run's forward proxy;
	// registered, it is relayed there unrecorded (it records itself). A
	// recorder too old to know the call records it twice, no worse.
	_, _ = ctl.Endpoint(ctx, controlapi.Endpoint{Addr: ln.Addr().String()})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(env.Stdout, "http://%s%s\n", ln.Addr(), path)
	ctx, stop := untilSignal(ctx, env)
	defer stop(nil)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// exitErr passes the server's exit code on.
func exitErr(exit int, err error) error {
	if err != nil {
		return err
	}
	if exit != 0 {
		return withCode(exit, errSilent)
	}
	return nil
}

// serverGrace is how long an MCP server has to exit once its client is
// done.
const serverGrace = 5 * time.Second

// policyOptions are the relay's options under --policy: each tools/call
// decided (mcp.Policy.Intercept), an outbox call held through the run's
// control API (run now, with a note, outside a booth run), the server's
// tools/list learnt.
func (c *McpRunCmd) policyOptions(ctx context.Context, ctl controlapi.Run, name string, session int, w io.Writer) mcp.RelayOptions {
	p := c.policy
	hold := func(tool string, args json.RawMessage, approve bool) (string, error) {
		out, err := ctl.MCPOutbox(ctx, controlapi.MCPOutbox{Server: name, Session: session, Tool: tool, Arguments: args, Approve: approve})
		return out.Key, err
	}
	say := func(s string) { fmt.Fprintf(w, "jukebox mcp: %s\n", s) }
	return mcp.RelayOptions{Max: c.MaxMessage,
		ServerSaw: func(m mcp.Message) { p.Learn(name, m) },
		Rewrite:   func(m mcp.Message) []byte { return p.Listing(name, m) },
		Intercept: p.Intercept(name, hold, say)}
}

// relayLive starts the server and relays until the client is done; the
// server's exit code (-1 when it was killed, or did not start). A server
// started in the middle of a session (a fork going live) first gets the
// client's handshake again from r; nil r is a server from the start.
func (c *McpRunCmd) relayLive(ctx context.Context, env *Env, argv []string, rec mcp.Recorder, r *mcp.Replayer, opts mcp.RelayOptions) (int, error) {
	srv := exec.CommandContext(ctx, argv[0], argv[1:]...)
	srv.Stderr = env.Stderr
	in, err := srv.StdinPipe()
	if err != nil {
		return -1, err
	}
	out, err := srv.StdoutPipe()
	if err != nil {
		return -1, err
	}
	if err := srv.Start(); err != nil {
		return -1, fmt.Errorf("start the MCP server %s: %w", argv[0], err)
	}
	serverOut := bufio.NewReaderSize(out, 64<<10)
	if r != nil {
		if err := r.Handshake(in, serverOut, rec); err != nil {
			in.Close()
			srv.Process.Kill()
			srv.Wait()
			return -1, fmt.Errorf("the MCP server %s, started at the fork point: %w", argv[0], err)
		}
	}
	// Once the client is done, the server has a few seconds to exit by
	// itself (most exit when their input ends), then it is ended.
	opts.Max = c.MaxMessage
	opts.ClientDone = func() { time.AfterFunc(serverGrace, func() { srv.Process.Kill() }) }
	rerr := mcp.Relay(env.Stdin, env.Stdout, in, serverOut, rec, opts)
	werr := srv.Wait()
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, rerr
	case errors.As(werr, &ee):
		return ee.ExitCode(), rerr
	}
	return -1, errors.Join(rerr, werr)
}

// serveOwnTape records a session that runs on its own (no jukebox record
// around it): a served run, in process, on a tape of its own.
func (c *McpRunCmd) serveOwnTape(ctx context.Context, env *Env, name string, argv []string) (controlapi.Run, func(int) error, error) {
	path, err := tapeIn(c.Output, "tapes", "mcp-"+name)
	if err != nil {
		return nil, nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	ready := make(chan engine.ServeInfo, 1)
	type outcome struct {
		res *engine.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := engine.Serve(ctx, engine.ServeOptions{
			RunOptions: engine.RunOptions{Argv: argv, Name: "mcp-" + name, Version: version, AutoName: c.Output == ""},
			Tape:       path, Ready: func(i engine.ServeInfo) { ready <- i }})
		done <- outcome{res, err}
	}()
	select {
	case info := <-ready:
		ctl := info.Control // in this process: called directly, not over HTTP
		finish := func(exit int) error {
			ctl.End(context.WithoutCancel(ctx), controlapi.End{ExitCode: exit})
			o := <-done
			stop()
			if err := runFailed(o.err, o.res); err != nil {
				return err
			}
			if err := unreadable(o.res); err != nil {
				return err
			}
			fmt.Fprintf(env.Stderr, "jukebox mcp: %s: recorded %d frames to %s\n", name, o.res.Frames, o.res.Tape)
			return nil
		}
		return ctl, finish, nil
	case o := <-done:
		stop()
		if o.err == nil {
			o.err = errors.New("the recorder stopped before it served")
		}
		return nil, nil, o.err
	}
}

// control is the control API of the run this session is part of: the
// run's over HTTP under jukebox record, replay or fork; on its own, a
// served run in this process, called directly (finish ends it).
func (c *McpRunCmd) control(ctx context.Context, env *Env, name string, argv []string) (controlapi.Run, func(int) error, error) {
	client, err := controlapi.FromEnv()
	switch {
	case err != nil:
		return nil, nil, err
	case client != nil:
		return client, nil, nil
	}
	if client, pid := controlFromAncestors(); client != nil {
		fmt.Fprintf(env.Stderr, "jukebox mcp: %s: joined the run of process %d (found through the process tree: the MCP client did not pass JUKEBOX_CONTROL on)\n", name, pid)
		return client, nil, nil
	}
	return c.serveOwnTape(ctx, env, name, argv)
}

// recorder sends each message of the session to the tape, saying on w
// what was wrong with a line, and once that the recorder cannot be
// reached (the session goes on unrecorded then).
func recorder(ctx context.Context, ctl controlapi.Run, server string, session int, w io.Writer) mcp.Recorder {
	ctx = context.WithoutCancel(ctx) // the session's last lines are recorded after an interrupt too
	var warned sync.Once
	return func(m mcp.Message) {
		if m.Problem != "" && !strings.HasPrefix(m.Problem, mcp.PolicyAnswer) && m.Problem != mcp.NotRecorded {
			fmt.Fprintf(w, "jukebox mcp: %s: %s %s: %s\n", server, "a message", dirText(m.Dir), m.Problem)
		}
		_, err := ctl.MCPMessage(ctx, controlapi.MCPMessage{Server: server, Session: session, Dir: m.Dir,
			Message: string(m.Raw), Problem: m.Problem, Size: m.Size})
		if err != nil {
			warned.Do(func() {
				fmt.Fprintf(w, "jukebox mcp: %s: the recorder did not take a message (%v): the session goes on, not all of it on the tape\n", server, err)
			})
		}
	}
}

func dirText(d tapefmt.MCPDirection) string {
	if d == tapefmt.MCPToServer {
		return "from the agent"
	}
	return "from the server"
}

// McpWrapCmd rewrites an mcpServers config to go through jukebox mcp.
type McpWrapCmd struct {
	File    string `arg:"" type:"existingfile" help:"The config: Claude Desktop's claude_desktop_config.json, Cursor's mcp.json, VS Code's mcp.json (servers), an Agents SDK's config."`
	InPlace bool   `short:"i" name:"in-place" help:"Write the new config over FILE (the old one is kept as FILE.orig) instead of printing it."`
	Jukebox string `placeholder:"PATH" help:"The jukebox the config starts (default: this one's absolute path)."`
}

// Run prints or writes the wrapped config, and says on stderr what it did.
func (c *McpWrapCmd) Run(env *Env) error {
	bin := c.Jukebox
	if bin == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		bin = self
	}
	in, err := os.ReadFile(c.File)
	if err != nil {
		return err
	}
	out, res, err := mcp.Wrap(in, bin)
	if err != nil {
		return withCode(ExitUsage, fmt.Errorf("%s: %w", c.File, err))
	}
	for _, name := range res.Wrapped {
		fmt.Fprintf(env.Stderr, "jukebox mcp wrap: %s: through jukebox mcp\n", name)
	}
	for _, name := range res.Already {
		fmt.Fprintf(env.Stderr, "jukebox mcp wrap: %s: already through jukebox mcp\n", name)
	}
	for name, why := range res.Skipped {
		fmt.Fprintf(env.Stderr, "jukebox mcp wrap: %s: left as it is: %s\n", name, why)
	}
	if !c.InPlace {
		_, err := env.Stdout.Write(out)
		return err
	}
	if err := os.WriteFile(c.File+".orig", in, 0o600); err != nil {
		return err
	}
	fi, err := os.Stat(c.File)
	if err != nil {
		return err
	}
	tmp := c.File + ".jukebox-tmp"
	if err := os.WriteFile(tmp, out, fi.Mode().Perm()); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.File); err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Fprintf(env.Stderr, "jukebox mcp wrap: wrote %s (the old one is %s.orig)\n", c.File, c.File)
	return nil
}
