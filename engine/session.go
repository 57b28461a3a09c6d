package engine

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/internal/gitref"
	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/mcp"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// RunOptions describe the agent process that a session runs.
type RunOptions struct {
	// SourceName is the tape a fork or a replay runs from as the user
	// named it, when that is not the path opened (a store's URL, the tape
	// fetched into the cache): recorded as the new tape's parent path, so
	// that a teammate finds the parent where the user did.
	SourceName string
	Argv       []string
	Dir        string   // working directory; "" is the current one
	Env        []string // environment to start from; nil is os.Environ()
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	Seed       int64       // handed to the agent as JUKEBOX_SEED and PYTHONHASHSEED; 0 picks one
	Name       string      // run name, for the tape
	Version    string      // jukebox version, for the tape
	OnEvent    func(Event) // called as the run goes; may be nil
	// AutoName says the tape's path was chosen by jukebox, not asked for:
	// when a file is there already (another run started the same
	// millisecond), the next free name is taken (NAME-2.jbx, NAME-3.jbx,
	// ...), exclusively, never overwriting. OnTape, if set, is told the
	// path once the tape is created, before the agent starts.
	AutoName bool
	OnTape   func(path string)
	// QuietSDKs sets QuietSDKEnv in the agent's environment, over what it
	// had, switching off the SDKs' own traces and telemetry.
	QuietSDKs bool
	// Limits are the circuit breaker's (package breaker) for the live
	// calls of a record or a fork; zero is none. A trip refuses the call
	// with an error the agent's SDK surfaces, writes a breaker.trip frame
	// and stops the agent (Result.Breaker).
	Limits breaker.Limits
	// Redact are patterns (Go regexp) whose matches are masked in what the
	// tape keeps of prompts, responses, output and files
	// (redact.Masker). Replay and fork add the patterns of the tape they
	// read, and mask live requests with those before matching them.
	Redact []string
	// Match are the matching rules the tape keeps (run.start's match):
	// the rules given to record; a replay or a fork keeps its source
	// tape's, and matches with them whatever else it is given.
	Match *tapefmt.MatchRules
	// IgnoreOutput are patterns (Go regexp) whose matches are replaced by
	// "…" in each line of stdout before a replay compares it with the
	// recording's (timings, dates). Written into the tape (run.start's
	// ignore_output); a replay adds its source tape's before its own.
	IgnoreOutput []string
	// RecordMode is record's --record-mode (once, new, all, none) when one
	// was given: written on the tape (run.start's record_mode).
	RecordMode string
	// Tags are the run's KEY=VALUE labels (run.start's tags); a replay or
	// a fork adds them to its source tape's.
	Tags map[string]string
	// Booth, when set, runs the agent inside the Shadow Booth.
	Booth *BoothOptions
	// MCP are MCP servers that speak streamable HTTP, by name: a recording
	// serves a recording proxy to each on 127.0.0.1 and gives the agent
	// its URL in MCPURLEnv(name); a replay or a fork serves the servers
	// its tape's run was given, from the tape.
	MCP map[string]string
	// Signals are the signals the caller receives while the agent runs,
	// handed on to the agent. Each is forwarded to it (on Linux, to its
	// process group, which holds the terminal's foreground while it runs:
	// jobs_linux.go; elsewhere, except a Ctrl-C or Ctrl-\ that the
	// terminal has already delivered to it); an interrupt marks the run
	// interrupted. In the booth, whose namespace owns the agent, the
	// first one stops the run instead, and the staged changes are settled
	// as the commit policy says. The engine installs no signal handlers of
	// its own: the caller does (signal.Notify) and passes a context that
	// these signals do not cancel, since the agent decides when the run
	// ends. Nil forwards nothing.
	Signals <-chan os.Signal
	// StopGrace is how long an agent outside the booth has to exit after
	// the first stop signal before its whole tree is killed; a second
	// signal kills it at once. 0 is DefaultGrace.
	StopGrace time.Duration
	// Telemetry, when set, sees the tape as it is written (a live
	// OpenTelemetry export, package export): every frame and blob, never
	// waited for. Before run.end is written it is told the run ended, and
	// what it lost goes into run.end.
	Telemetry Telemetry
	// Starting, when set, is called once, just before the agent starts
	// (after the tape, the proxy and the run's files are ready): what a
	// caller says of the run it starts (replay's "running the recorded
	// command") is then never said of one refused before.
	Starting func()
	// MCPPolicy, when set, stages the tools/call requests to the HTTP
	// servers of MCP in the booth as jukebox mcp --policy does a stdio
	// server's: run, held for the commit (the outbox) or refused.
	MCPPolicy *mcp.Policy
	// Routes send the requests the agent makes to a host elsewhere
	// (--route HOST=URL, ParseRoutes): HOST or HOST:PORT to a base URL.
	// They are recorded under the host the agent asked for.
	Routes map[string]string
	// UpstreamRoots, when set, are the roots upstream TLS is verified
	// with instead of the system's (--upstream-ca, LoadUpstreamCA).
	UpstreamRoots *x509.CertPool
}

// Telemetry is a live consumer of the tape a run writes.
type Telemetry interface {
	tapefmt.Observer
	// Finish ends the export with the run's end, whose frame is written
	// at the time offset at, waiting a bounded time for what is queued,
	// and says how many spans were lost and the first export error (""
	// when none).
	Finish(end tapefmt.RunEnd, at time.Duration) (lost int64, exportErr string)
}

// Result is how a session ended.
type Result struct {
	Tape string         `json:"tape,omitempty"`
	End  tapefmt.RunEnd `json:"end"`
	// UpstreamFromTape are, in a fork, the providers whose live calls went
	// to the upstream the parent was recorded against (ForkUpstreams):
	// none was given, and it answered.
	UpstreamFromTape map[string]string `json:"upstream_from_tape,omitempty"`
	Calls            uint64            `json:"calls"`
	// Refused counts the calls of Calls the circuit breaker refused: never
	// sent, never billed.
	Refused    uint64      `json:"refused_calls,omitempty"`
	Frames     uint64      `json:"frames,omitempty"` // absent when no tape was written (replay without -o)
	Divergence *Divergence `json:"divergence,omitempty"`
	Unused     int         `json:"unused_calls,omitempty"` // recorded calls replay never needed
	// Served counts the calls answered from the tape (replay only); the
	// rest of Calls went live (--on-divergence live).
	Served *uint64 `json:"served,omitempty"`
	// ControlServed counts the control-API exchanges (turns, markers,
	// transactions, held MCP calls) answered from the tape; those recorded
	// and never asked for count in Unused.
	ControlServed int `json:"control_served,omitempty"`
	// ControlExchanges counts the control-API exchanges the agent made
	// that go on the tape (turns, markers, transactions and their
	// operations, held MCP calls), live or answered from a tape.
	ControlExchanges int `json:"control_exchanges,omitempty"`
	// AnsweredLocally counts the requests to known SDK telemetry endpoints
	// that replay or a fork answered itself, and LiveAllowed those to the
	// hosts replay --live let through; neither is on the tape's account.
	AnsweredLocally uint64 `json:"answered_locally,omitempty"`
	LiveAllowed     uint64 `json:"live_allowed,omitempty"`
	// OutputSame says whether the agent printed exactly what it printed when
	// recorded, and ExitSame whether it ended as it did then (replay only;
	// ExitSame is absent when the recording has no end).
	OutputSame *bool `json:"output_same,omitempty"`
	ExitSame   *bool `json:"exit_same,omitempty"`
	// RecordedEnd is how the recorded run ended, when ExitSame is false.
	RecordedEnd *tapefmt.RunEnd `json:"recorded_end,omitempty"`
	// EnvChanged names, when ExitSame is false, the variables run.start
	// describes the recorded run by that this replay's environment has
	// otherwise or not at all (an agent without its PYTHONPATH fails at its
	// imports). Names only, sorted: never a value.
	EnvChanged []string `json:"environment_changed,omitempty"`
	// NotCommitted names, when ExitSame is false, the paths that SDK
	// commits changed when recorded and that this replay, outside the
	// booth, answered from the tape without committing: the agent may have
	// looked for them (replay --booth puts them in its view).
	NotCommitted []string `json:"not_committed,omitempty"`
	// OutputNotRecorded: the recording has no output to compare with,
	// OutputSame is absent (its process was not one jukebox started:
	// RunStart.External).
	OutputNotRecorded bool `json:"output_not_recorded,omitempty"`
	// OutputSwapped: stdout is the recording's only once the answers of
	// identical requests are taken as interchangeable (threads sending
	// identical requests at once get them in an order nothing controls);
	// OutputSame is then true.
	OutputSwapped bool `json:"output_swapped,omitempty"`
	// Interrupted names the recorded call (its number) where a replay
	// interrupted the agent (SIGINT), because the recording was
	// interrupted while that call was in flight; nil otherwise.
	Interrupted *uint64 `json:"interrupted_at_call,omitempty"`
	// InterruptedBy is the signal it stopped the agent with there: SIGINT,
	// or the recording's stop signal (run.end stopped).
	InterruptedBy string `json:"interrupted_by,omitempty"`
	// Repeated is how often replay --repeat served a recorded answer again.
	Repeated int `json:"repeated,omitempty"`
	// MCPMissing counts the MCP requests a replay answered with an error,
	// their recorded session not holding them; MCPNotServed names the
	// recorded MCP sessions ("files#1") no jukebox mcp of the replay was
	// answered from: their servers may have run live.
	MCPMissing   int      `json:"mcp_missing,omitempty"`
	MCPNotServed []string `json:"mcp_not_served,omitempty"`
	// OutputDiff is where stdout first differs, when OutputSame is false.
	OutputDiff *OutputDiff  `json:"output_diff,omitempty"`
	Booth      *BoothResult `json:"booth,omitempty"`
	// Unreadable says why the tape did not close or read back (TapeError).
	Unreadable string `json:"tape_unreadable,omitempty"`
	// Replaced says the file at the tape's path is another tape, put
	// there while the run wrote its own (tapefmt.ErrReplaced).
	Replaced bool `json:"tape_replaced,omitempty"`
	// NetRefused counts the connections the agent tried that jukebox did
	// not serve and the booth refused (--net none), the first
	// MaxNetRefusedFrames of them on the tape as net.refused frames.
	NetRefused int `json:"net_refused,omitempty"`
	// HermeticRefused counts the plain TCP connections --hermetic refused
	// (net.conn frames with refused set); NetConns those jukebox carried
	// (--net none without --hermetic). RefusedTo lists where the first
	// refused connections went, host:port, named where the booth's
	// resolver named the host, each with why when it is not plain.
	HermeticRefused int      `json:"hermetic_refused,omitempty"`
	NetConns        int      `json:"net_conns,omitempty"`
	RefusedTo       []string `json:"refused_to,omitempty"`
	// LiveFailed counts the live calls that never reached their upstream
	// (refused, unknown host, timeout); LiveError is the first one's
	// error. The agent saw each fail as it would have without jukebox.
	LiveFailed int `json:"live_failed,omitempty"`
	// TooLarge counts the agent's requests jukebox refused (413) for a
	// body over the 64 MiB it holds of a request: not sent, not on the
	// tape. TooLargeTo is the first one's method and URL.
	TooLarge   int    `json:"requests_too_large,omitempty"`
	TooLargeTo string `json:"requests_too_large_to,omitempty"`
	// HTTPRequests counts the agent's requests that were not model calls
	// (http.request frames), through the forward proxy.
	HTTPRequests int `json:"http_requests,omitempty"`
	// MCPMessages counts the MCP messages jukebox mcp reported to the run
	// (mcp.message frames, starts aside).
	MCPMessages int `json:"mcp_messages,omitempty"`
	// TLSFailed counts the agent's TLS connections through the proxy that
	// did not accept the run's certificate (a client that pins
	// certificates or keeps its own trust store); TLSError is the first
	// one's host and error. Their requests were never made.
	TLSFailed int    `json:"tls_failed,omitempty"`
	TLSError  string `json:"tls_error,omitempty"`
	LiveError string `json:"live_error,omitempty"`
	// ExportLost and ExportError are what the live OpenTelemetry export
	// (RunOptions.Telemetry) lost and its first error, as run.end keeps them.
	ExportLost  int64  `json:"export_lost,omitempty"`
	ExportError string `json:"export_error,omitempty"`
	// Breaker is the circuit breaker's trip, when it stopped the run.
	Breaker *tapefmt.BreakerTrip `json:"breaker,omitempty"`
	// Unpriced are the models of calls on the tape that used tokens at no
	// known price ("?" for calls that name none): their cost is unknown,
	// not zero.
	Unpriced []string `json:"unpriced_models,omitempty"`
}

// session is what Record and Replay share: a tape to write, a proxy, a child.
type session struct {
	o     RunOptions
	roots *runca.Roots // the CA bundle's roots, read ahead (nil: read when needed)
	mode  tapefmt.RunMode
	tape  *tapefmt.Writer
	path  string
	proxy *proxy
	outs  *outputs
	// pre is the agent's keeper, started ahead while the run is set up
	// (preKeep), or nil; released unless the agent was handed to it.
	pre   *prekept
	child atomic.Pointer[child] // set once the agent runs; read by proxy handlers
	// abandoned is the end abandon wrote on the tape: a run whose agent
	// never ran (unstarted).
	abandoned *tapefmt.RunEnd
	// stoppedBy is the signal replayedStop sent, named.
	stoppedBy atomic.Pointer[string]
	// replayedStop stops the agent, with the signal given, where the
	// recording was stopped (a replay of such a tape; nil otherwise).
	replayedStop chan os.Signal
	// cancel stops a booth run, whose child the booth owns.
	cancel atomic.Pointer[context.CancelFunc]
	div    atomic.Pointer[Divergence] // the first divergence, replay and fork
	// interruptedAt is the call where a replay interrupted the agent, as
	// its recording was (replayedStop).
	interruptedAt atomic.Pointer[Call]
	// refused counts net.refused frames (booth --net none).
	refused atomic.Int64
	// net is what the booth's network carried and refused (netcarry.go);
	// its net.conn frames are numbered with the proxy's WebSocket ones.
	net   netState
	trip  atomic.Pointer[tapefmt.BreakerTrip] // the breaker's trip, once it tripped
	mcp   []*mcpEndpoint                      // the HTTP MCP servers served for the run
	files *captureFiles                       // the CA bundle and Node preload written for the agent
	// approved: a person answered yes to the booth's commit (--commit
	// ask), which lets the outbox's calls that need approval run.
	approved bool
	// indexed, when set, waits for what the run must have before the
	// proxy answers (a replay's index of the recorded calls, built while
	// the run is set up): its error ends the run before the agent starts.
	indexed func() error
}

// guard is the circuit breaker for this session's live calls, or nil; the
// proxy records the rates it prices calls at (proxy.rate).
func (s *session) guard() *guard {
	s.proxy.unknownRate = s.o.Limits.UnknownModelRate
	return newGuard(s.o.Limits, func(t *breaker.Trip) {
		p := tapefmt.BreakerTrip{Rule: t.Rule, Reason: t.Reason, Cost: t.Cost, Tokens: t.Tokens, Evidence: t.Evidence, Agent: t.Agent}
		s.trip.CompareAndSwap(nil, &p) // the first trip is the run's outcome
		s.appendFrame(p)
	}, func() { s.stopAgent(3 * time.Second) })
}

// stopAgent ends the agent early: SIGTERM, then SIGKILL after grace.
func (s *session) stopAgent(grace time.Duration) {
	if c := s.child.Load(); c != nil {
		c.kill(grace)
	} else if cancel := s.cancel.Load(); cancel != nil {
		(*cancel)()
	}
}

// workspace is the agent's working directory, absolute.
// protected are the files a booth agent must not change: the tape this
// run writes, if it writes one (a replay without -o does not).
func (s *session) protected() []string {
	if s.path == "" {
		return nil
	}
	p, err := filepath.Abs(s.path)
	if err != nil {
		return nil
	}
	return []string{p}
}

func (s *session) workspace() string {
	if s.o.Dir != "" {
		return s.o.Dir
	}
	cwd, _ := os.Getwd()
	return cwd
}

func (s *session) emit(e Event) {
	if s.o.OnEvent != nil {
		s.o.OnEvent(e)
	}
}

// openTape creates the output tape and writes run.start.
func (s *session) openTape(path string, sync tapefmt.SyncPolicy, start tapefmt.RunStart) error {
	if path == "" {
		return nil
	}
	mask, err := redact.NewMasker(s.o.Redact)
	if err != nil {
		return err
	}
	opts := tapefmt.Options{Sync: sync, Filter: redact.NewFilter(mask)}
	if s.o.Telemetry != nil {
		opts.Observer = s.o.Telemetry
	}
	// -o names/new/folder/run.jbx: the folder is made, as ./tapes is.
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("the tape's folder: %w", err)
	}
	w, err := tapefmt.Create(path, opts)
	stem := strings.TrimSuffix(path, ".jbx")
	for n := 2; s.o.AutoName && errors.Is(err, fs.ErrExist) && n < 1000; n++ {
		path = fmt.Sprintf("%s-%d.jbx", stem, n)
		w, err = tapefmt.Create(path, opts)
	}
	if err != nil {
		return err
	}
	if s.o.OnTape != nil {
		s.o.OnTape(path)
	}
	if _, err := w.Append(0, start); err != nil {
		w.Close()
		return err
	}
	s.tape, s.path = w, path
	return nil
}

func (s *session) runStart(upstreams map[string]string) tapefmt.RunStart {
	host, _ := os.Hostname()
	cwd := s.workspace()
	rs := tapefmt.RunStart{Name: s.o.Name, Argv: s.o.Argv, Cwd: cwd, Env: runStartEnv(s.baseEnv()),
		Seed: s.o.Seed, Host: host, Version: s.o.Version, Mode: s.mode,
		Started: time.Now().Format(time.RFC3339Nano), Upstream: upstreams, Match: s.o.Match, IgnoreOutput: s.o.IgnoreOutput,
		RecordMode: s.o.RecordMode, Tags: s.o.Tags, User: userName(s.baseEnv())}
	if g, ok := gitref.Read(cwd); ok {
		rs.Git = &tapefmt.GitRef{Commit: g.Commit, Branch: g.Branch}
	}
	return rs
}

// userName is the name of the account jukebox runs as, else USER or
// LOGNAME of env.
func userName(env []string) string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	m := envMap(env)
	if m["USER"] != "" {
		return m["USER"]
	}
	return m["LOGNAME"]
}

func (s *session) baseEnv() []string { return s.o.baseEnv() }

// baseEnv is the environment the agent starts from, before jukebox's
// variables: Env, else jukebox's own.
func (o RunOptions) baseEnv() []string {
	if o.Env != nil {
		return o.Env
	}
	return os.Environ()
}

// childEnv points the child's SDKs at the proxy. In replay, placeholder API
// keys are set where none exist so that SDKs start.
func (s *session) childEnv(placeholderKeys bool) []string {
	set := s.runEnv(placeholderKeys)
	base := envMap(s.baseEnv())
	env := make([]string, 0, len(base)+len(set))
	for k, v := range base {
		if _, over := set[k]; !over {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// runEnv are the variables jukebox sets for the agent, over its own.
func (s *session) runEnv(placeholderKeys bool) map[string]string {
	set := map[string]string{
		"JUKEBOX_CONTROL": s.proxy.url() + "/_jukebox", "JUKEBOX_MODE": string(s.mode),
		"JUKEBOX_SEED": strconv.FormatInt(s.o.Seed, 10), "PYTHONHASHSEED": strconv.FormatInt(s.o.Seed&0xffffffff, 10),
		"JUKEBOX_TAPE": s.path, TokenEnv: s.proxy.control.token,
	}
	base := envMap(s.baseEnv())
	if _, ok := base["PYTHONUNBUFFERED"]; !ok {
		set["PYTHONUNBUFFERED"] = "1" // so output is recorded when it happens
	}
	for _, p := range providers {
		for _, name := range p.BaseEnv {
			set[name] = s.proxy.baseURL(p)
		}
		if placeholderKeys && base[p.KeyEnv] == "" {
			set[p.KeyEnv] = "sk-jukebox-replay-placeholder"
		}
	}
	if s.o.QuietSDKs {
		for _, q := range QuietSDKEnv {
			set[q.Name] = q.Value
		}
	}
	for _, e := range s.mcp {
		set[MCPURLEnv(e.name)] = e.url
	}
	s.captureEnv(set, base)
	return set
}

// outputs capture the agent's output for the session. Only a replay
// compares stdout with the recording's: a recording or a fork keeps no
// copy of what may be gigabytes.
func (s *session) outputs() *outputs {
	o := &outputs{tape: s.tape, emit: s.emit, keepStdout: s.mode == tapefmt.ModeReplay}
	if s.proxy != nil {
		o.wrote = s.proxy.wrote // the run's result names the first frame the tape refused
	}
	return o
}

// agentFolder checks the folder the agent is to run in: one that is not
// there failed the start as the program's own "fork/exec PROGRAM: no such
// file or directory", naming a program that is there.
func agentFolder(dir string) error {
	if dir == "" {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("the agent's folder (--dir) %s: %w", dir, errors.Unwrap(err))
	case !st.IsDir():
		return fmt.Errorf("the agent's folder (--dir) %s: not a folder", dir)
	}
	return nil
}

// run starts the agent, waits for it and closes the tape.
func (s *session) run(ctx context.Context, placeholderKeys bool) (*Result, error) {
	s.outs = s.outputs()
	if err := agentFolder(s.o.Dir); err != nil {
		s.abandon(err)
		return nil, err
	}
	s.readyControl()
	if err := s.startMCP(); err != nil {
		s.abandon(err)
		return nil, err
	}
	if err := s.writeCaptureFiles(); err != nil {
		s.abandon(err)
		return nil, err
	}
	env := s.childEnv(placeholderKeys)
	if s.indexed != nil {
		if err := s.indexed(); err != nil {
			s.withdraw()
			return nil, err
		}
	}
	s.proxy.serve() // everything its handlers read is set
	res := &Result{Tape: s.path}
	var end tapefmt.RunEnd
	var runErr error
	if s.o.Starting != nil {
		s.o.Starting()
	}
	if s.o.Booth != nil {
		end, runErr = s.runBooth(ctx, env, res)
	} else {
		c, err := startChild(s.o, env, s.outs, s.files.dir, s.pre)
		if err != nil {
			s.abandon(err)
			return nil, fmt.Errorf("start %s: %w", s.o.Argv[0], err)
		}
		s.child.Store(c)
		end = c.wait(ctx, s.o.Signals, s.replayedStop)
	}
	return s.close(ctx, end, res, runErr)
}

// close stops the proxy, rolls back the transactions the agent left open,
// fills in the result and closes the tape.
func (s *session) close(ctx context.Context, end tapefmt.RunEnd, res *Result, runErr error) (*Result, error) {
	s.stopMCP()
	s.proxy.Close()
	s.removeCaptureFiles()
	s.proxy.control.txs.closeAll(context.WithoutCancel(ctx))
	s.proxy.control.ctl.close()
	res.End, res.Calls, res.NetRefused, res.Breaker = end, s.proxy.calls.Load(), int(s.refused.Load()), s.trip.Load()
	res.Refused = s.proxy.tripped.Load()
	if c := s.interruptedAt.Load(); c != nil && c.Request != nil {
		n := c.Request.Call
		res.Interrupted = &n
		if by := s.stoppedBy.Load(); by != nil {
			res.InterruptedBy = *by
		}
	}
	res.HTTPRequests, res.MCPMessages = int(s.proxy.httpIDs.Load()), s.proxy.control.mcp.count()
	res.ControlExchanges = int(s.proxy.control.exchanges.Load())
	if res.TLSFailed = int(s.proxy.fwd.tlsFailed.Load()); res.TLSFailed > 0 {
		res.TLSError = *s.proxy.fwd.tlsErr.Load()
	}
	s.proxy.mu.Lock()
	res.Unpriced = slices.Sorted(maps.Keys(s.proxy.unpriced))
	s.proxy.mu.Unlock()
	if res.TooLarge = int(s.proxy.tooLarge.Load()); res.TooLarge > 0 {
		res.TooLargeTo = *s.proxy.tooLargeTo.Load()
	}
	if res.LiveFailed = int(s.proxy.liveFailed.Load()); res.LiveFailed > 0 {
		res.LiveError = *s.proxy.liveErr.Load()
	}
	s.emit(Event{Kind: EventExit})
	return res, errors.Join(runErr, s.finish(end, res))
}

// serveControl readies the control API for this session's mode (its
// transactions, if it serves them), then starts the proxy: it runs
// before the agent can call it, and the handlers see it all set.
func (s *session) serveControl() {
	s.readyControl()
	s.proxy.serve() // everything its handlers read is set
}

// readyControl readies the control API for this session's mode; the
// proxy answers once served.
func (s *session) readyControl() {
	s.proxy.control.mode = s.mode
	s.proxy.control.txs = newSDKTxs(s)
	s.proxy.control.mcp.outboxOn = s.o.Booth != nil && s.mode == tapefmt.ModeRecord
	s.proxy.control.mcp.policy = s.o.MCPPolicy
}

// finish writes run.end, closes the tape and reads it back: a tape that
// does not is a *TapeError, never a silent success.
func (s *session) finish(end tapefmt.RunEnd, res *Result) error {
	if s.tape == nil {
		return nil
	}
	// The live export ends the run's span when run.end is timed, as an
	// export of the tape does: both send the same span.
	at := s.tape.Now()
	if s.o.Telemetry != nil {
		end.ExportLost, end.ExportError = s.o.Telemetry.Finish(end, at)
		res.ExportLost, res.ExportError = end.ExportLost, end.ExportError
	}
	_, err := s.tape.AppendAt(at, 0, end)
	if s.proxy != nil {
		err = errors.Join(s.proxy.writeError(), err)
	}
	res.Frames = s.tape.Len()
	if err = errors.Join(err, s.tape.Close()); err != nil {
		err = fmt.Errorf("%s: %w", s.path, err)
	} else {
		err = tapefmt.ReadBackWritten(s.path, s.tape)
	}
	if err != nil {
		res.Unreadable, res.Replaced = err.Error(), errors.Is(err, tapefmt.ErrReplaced)
		return &TapeError{Path: s.path, Err: err}
	}
	return nil
}

// TapeError means a run ended but the tape it wrote did not close or does
// not read back whole. The run's Result is still returned beside it.
type TapeError struct {
	Path string
	Err  error // names the path
}

// Error says the tape does not read back and why, naming the path.
func (e *TapeError) Error() string { return "the tape does not read back: " + e.Err.Error() }

// Unwrap returns the cause (a *tapefmt.FormatError, say).
func (e *TapeError) Unwrap() error { return e.Err }

// abandon closes what a session opened when the child could not start.
func (s *session) abandon(cause error) {
	s.stopServing()
	end := tapefmt.RunEnd{ExitCode: -1, Error: cause.Error()}
	if s.tape != nil {
		at := s.tape.Now()
		if s.o.Telemetry != nil {
			end.ExportLost, end.ExportError = s.o.Telemetry.Finish(end, at)
		}
		s.tape.AppendAt(at, 0, end)
		s.tape.Close()
	}
	s.abandoned = &end
}

// stopServing closes what a run that ends before its agent opened for
// it: the proxy, the MCP endpoints, the capture files.
func (s *session) stopServing() {
	if s.proxy != nil {
		s.proxy.Close()
	}
	s.stopMCP()
	s.removeCaptureFiles()
}

// withdraw ends a run whose source tape cannot be replayed (its index
// failed, found while the run was set up): as if it never began, the
// tape it began is removed with the rest.
func (s *session) withdraw() {
	s.stopServing()
	if s.tape != nil {
		s.tape.Close()
		os.Remove(s.path)
	}
}

// unstarted is the result of a run abandoned before its agent ran, with
// the end its tape has (exit -1 and why; the tape "" when the run wrote
// none), nil for any other: what --json reports of an agent that could
// not start.
func (s *session) unstarted() *Result {
	if s.abandoned == nil {
		return nil
	}
	return &Result{Tape: s.path, End: *s.abandoned}
}

// RecordOptions configure Record.
type RecordOptions struct {
	RunOptions
	Tape      string            // where to write the tape
	Upstreams map[string]string // provider name to base URL, ahead of the agent's environment
	Sync      tapefmt.SyncPolicy
}

// Record runs the agent with its model calls going through the recording
// proxy to the real upstreams, and writes everything onto a new tape.
func Record(ctx context.Context, o RecordOptions) (*Result, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("engine: no command to run")
	}
	pre := keepAhead(o.RunOptions)
	defer pre.release()
	s, err := recording(o, false)
	if err != nil {
		return nil, err
	}
	s.pre = pre
	res, err := s.run(ctx, false)
	if res == nil {
		res = s.unstarted()
	}
	return res, err
}

// keepAhead starts the agent's keeper ahead of it (preKeep) for a run
// outside the booth (a booth's agent is its init's), or nil; the caller
// releases it when the run is done.
func keepAhead(o RunOptions) *prekept {
	if o.Booth != nil {
		return nil
	}
	return preKeep(o.Stdin, cmp.Or(o.StopGrace, DefaultGrace))
}

// recording opens what a recording needs: the tape with its run.start,
// and the proxy to the live upstreams with the circuit breaker (Record,
// Serve).
//
// external says the process recorded is not one the session starts
// (Serve, RecordInProcess): its output is not captured (RunStart.External).
func recording(o RecordOptions, external bool) (*session, error) {
	if o.Seed == 0 {
		o.Seed = rand.Int64N(1<<31) + 1
	}
	s := &session{o: o.RunOptions, mode: tapefmt.ModeRecord}
	s.roots = runca.StartRoots(envMap(s.baseEnv())) // read while the tape and the proxy open
	ups := resolveUpstreams(o.Upstreams, envMap(s.baseEnv()))
	rs := s.runStart(ups)
	rs.External = external
	if err := s.openTape(o.Tape, o.Sync, rs); err != nil {
		return nil, err
	}
	var err error
	if s.proxy, err = newProxy(newLive(ups, s.o), s.tape, s.emit); err != nil {
		s.abandon(err)
		return nil, err
	}
	s.proxy.guard = s.guard()
	return s, nil
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// allowedEnv are the variables written in run.start; anything whose name
// looks secret is dropped again by the tape writer.
var allowedEnv = map[string]bool{"LANG": true, "TZ": true, "TERM": true, "PATH": true, "PYTHONPATH": true,
	"PYTHONHASHSEED": true, "NODE_ENV": true, "VIRTUAL_ENV": true, "OPENAI_BASE_URL": true, "ANTHROPIC_BASE_URL": true}

// runStartEnv picks the variables of env that may describe a run: locale,
// paths, and names starting LC_, JUKEBOX_ or AGENT_.
func runStartEnv(env []string) map[string]string {
	out := map[string]string{}
	for k, v := range envMap(env) {
		if allowedEnv[k] || strings.HasPrefix(k, "LC_") || strings.HasPrefix(k, "JUKEBOX_") || strings.HasPrefix(k, "AGENT_") {
			out[k] = v
		}
	}
	return out
}
