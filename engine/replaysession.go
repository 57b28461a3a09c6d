package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/redact"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ReplayOptions configure Replay.
type ReplayOptions struct {
	RunOptions        // an empty Argv runs the recorded command; Seed 0 hands the recorded seed
	From       string // the tape to replay
	// Remote opens a tape a URL names (a store's tape); nil reads files only.
	Remote tapefmt.RemoteOpener
	Tape   string // where to record the replayed run; "" records nothing
	Speed  Speed
	// Rules decide when a live request is the recorded one (compiled; nil
	// is the defaults and the rules remembered in the tape's sidecar
	// folder). An ignore path other than the defaults that matches no field
	// of any recorded request is an error.
	Rules *reqmatch.Rules
	// Live sends calls from the first divergence on to the real upstreams,
	// recording them (go-vcr's new episodes); else replay stops there.
	Live      bool
	Upstreams map[string]string
	// LiveHosts are the hosts whose requests go live, never matched
	// against the tape (replay --live); every other request that is not
	// on the tape is a divergence: nothing else leaves the machine.
	LiveHosts HostPatterns
	// Repeat serves a recorded answer again to a request asked more often
	// than recorded (vcrpy's allow_playback_repeats), and counts it
	// (Result.Repeated), instead of diverging.
	Repeat bool
}

// divergenceGrace is how long an agent may run on after replay answered a
// diverging request with an error, before it is stopped.
const divergenceGrace = 3 * time.Second

// Replay runs the agent against the recorded tape: every model call is
// answered from the tape, byte for byte, and no network connection is made.
// The first request the tape cannot answer is reported as a Divergence.
func Replay(ctx context.Context, o ReplayOptions) (*Result, error) {
	roots := runca.StartRoots(envMap(o.baseEnv())) // read while the tape is indexed
	t, index, err := openSourceIndexing(o.From, o.Remote, &o.RunOptions, o.Rules)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	defer func() { // the index reads the tape until it is done, the matcher after
		if m, _ := index(); m != nil {
			m.stop()
		}
	}()
	s := &session{o: o.RunOptions, mode: tapefmt.ModeReplay, roots: roots, pre: keepAhead(o.RunOptions)}
	defer s.pre.release()
	return s.replay(ctx, o, t, index)
}

// background runs f in a goroutine of its own; the returned func waits
// for its results (and may be called again).
func background[T any](f func() (T, error)) func() (T, error) {
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	return sync.OnceValues(func() (T, error) {
		r := <-done
		return r.v, r.err
	})
}

// openSource opens a recorded tape to answer calls from, indexes its calls
// under the rules (checking their ignore paths against them), and fills in
// what the options leave to the recording: the command and the seed.
func openSource(path string, remote tapefmt.RemoteOpener, o *RunOptions, rules *reqmatch.Rules) (*tapefmt.Tape, *Matcher, error) {
	t, index, err := openSourceIndexing(path, remote, o, rules)
	if err != nil {
		return nil, nil, err
	}
	m, err := index()
	if err != nil {
		t.Close()
		return nil, nil, err
	}
	return t, m, nil
}

// openSourceIndexing is openSource with the calls indexed in the
// background, while the run is set up: index waits for the index (and
// may be called again). The tape stays open until it is done.
func openSourceIndexing(path string, remote tapefmt.RemoteOpener, o *RunOptions, rules *reqmatch.Rules) (*tapefmt.Tape, func() (*Matcher, error), error) {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return nil, nil, err
	}
	start, err := FirstRunStart(t)
	if err == nil {
		if len(o.Argv) == 0 {
			if i := redact.RedactedArg(start.Argv); i >= 0 {
				err = &RedactedCommandError{Argv: start.Argv, Index: i}
			}
			o.Argv = start.Argv
		}
		o.Redact = slices.Concat(start.Redact, o.Redact)
		if o.Seed == 0 {
			o.Seed = start.Seed
		}
		o.IgnoreOutput = slices.Concat(start.IgnoreOutput, o.IgnoreOutput)
		o.Tags = withTags(start.Tags, o.Tags)
	}
	if err != nil {
		t.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	o.Match = start.Match
	return t, background(func() (*Matcher, error) {
		m, err := indexCalls(t, path, rules, start.Match)
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return m, err
	}), nil
}

func (s *session) replay(ctx context.Context, o ReplayOptions, t *tapefmt.Tape, index func() (*Matcher, error)) (*Result, error) {
	ignore, err := outputPatterns(s.o.IgnoreOutput)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.From, err)
	}
	_, ended := recordedEnd(t)
	start, _ := FirstRunStart(t)
	// The recorded output, read while the run is set up and runs: an
	// agent that streams its answers to stdout has thousands of frames.
	recorded := background(func() ([]byte, error) {
		if start != nil && start.External {
			return nil, nil // not compared: jukebox did not see it
		}
		return recordedStdout(t)
	})
	defer recorded() // it reads the tape until it is done
	tb := &tapeBackend{tape: t, speed: o.Speed, onDiv: func(d *Divergence) {
		if d.Frame < 0 && !ended { // past the last call of a cut tape
			d.Cut, d.TapeEnds = true, int64(t.Len())-1
		}
		if d.Frame >= 0 {
			rec, live := diffSides(d.Diff)
			d.Env = envSuspects(rec, live, start.Env, s.baseEnv())
		}
		s.diverged(d, o.Live)
	}}
	tb.forkCall, tb.overrides = forkOf(t)
	s.indexed = func() error { // before the proxy answers
		m, err := index()
		if m != nil {
			m.repeat = o.Repeat
			tb.m = m
		}
		return err
	}
	if s.o.Booth == nil { // a booth's child is the booth's: its stop is its own
		s.replayedStop = make(chan os.Signal, 1)
		tb.interrupted = func(c *Call) {
			if s.interruptedAt.CompareAndSwap(nil, c) { // noted before the agent can end
				end, _ := recordedEnd(t)
				sig := cmp.Or(stopSignal(end), os.Interrupt)
				name := "SIGINT"
				if ss, ok := sig.(syscall.Signal); ok && sig != os.Interrupt {
					name = signalName(ss)
				}
				s.stoppedBy.Store(&name)
				s.replayedStop <- sig
			}
		}
	}
	var ups map[string]string
	if o.Live || len(o.LiveHosts) > 0 {
		ups = resolveUpstreams(o.Upstreams, envMap(s.baseEnv()))
		tb.world = &openWorld{hosts: o.LiveHosts, upstreams: ups, live: newLive(ups, s.o)}
	}
	if o.Live {
		tb.fallback = tb.world.live
	}
	rs := s.runStart(ups)
	rs.Parent = &tapefmt.ParentRef{Tape: t.Head().String(), Frame: uint64(t.Len()), Path: parentPath(cmp.Or(o.SourceName, o.From))}
	rs.ShownTapeID = shownTapeID(t) // what the replayed agent is told (control.Info)
	// What replay answers can be had again from the tape: the replayed run
	// is synced only once it goes live (ReplayOptions.Live).
	if err := s.openTape(o.Tape, tapefmt.SyncNever, rs); err != nil {
		return nil, err
	}
	if s.tape != nil {
		// What a --live host answers cannot be had again: synced per step.
		tb.onLive = func() { s.tape.SetSync(tapefmt.SyncStep) }
	}
	if s.proxy, err = newProxy(tb, s.tape, s.emit); err != nil {
		s.abandon(err)
		return nil, err
	}
	res, err := s.run(ctx, true)
	if res == nil {
		return s.unstarted(), err
	}
	err = errors.Join(err, s.replayed(res, tb))
	if start.External {
		// Nothing to compare with: jukebox did not see the recorded
		// process's output (jukebox serve, a program recording itself).
		res.OutputNotRecorded = true
	} else if recorded, rerr := recorded(); rerr != nil {
		// A damaged tape: what cannot be compared is not called the same.
		err = errors.Join(err, fmt.Errorf("%s: the recorded output does not read, so the replay's cannot be compared with it: %w", t.Path(), rerr))
	} else if s.outs != nil {
		// The tape keeps output masked (RunStart.Redact), line by line:
		// both sides are masked again to compare, unless they are the same
		// bytes (masked the same), which spares compiling the rules.
		if replayed := s.outs.stdoutCopy(); !bytes.Equal(recorded, replayed) {
			rec, rep := tb.m.mask.Mask(recorded), tb.m.mask.Mask(replayed)
			res.OutputDiff = compareOutput(rec, rep, ignore)
			if res.OutputDiff != nil { // only then: the groups read every recorded answer
				if g := tb.m.answerGroups(); len(g) > 0 {
					res.OutputDiff, res.OutputSwapped = compareSwapped(rec, rep, ignore, g)
				}
			}
		}
		same := res.OutputDiff == nil
		res.OutputSame = &same
	}
	if end, ok, eerr := ReadEnd(t); eerr != nil {
		err = errors.Join(err, fmt.Errorf("%s: the recorded run's end does not read, so the replay's exit cannot be compared with it: %w", t.Path(), eerr))
	} else if ok {
		same := end.ExitCode == res.End.ExitCode && end.Signal == res.End.Signal
		res.ExitSame = &same
		if !same {
			res.RecordedEnd = &end
			res.EnvChanged = envChanged(start.Env, s.baseEnv())
			res.NotCommitted = s.proxy.control.txs.notCommitted()
		}
	}
	return res, err
}

// replayed fills in what a replay found of the tape tb served: the first
// divergence, the calls served, repeated and never asked for, the MCP
// sessions (an error when the tape's MCP frames do not read).
func (s *session) replayed(res *Result, tb *tapeBackend) error {
	res.Divergence, res.Repeated = s.div.Load(), tb.m.Repeats()
	if d := res.Divergence; d != nil && d.Frame >= 0 {
		d.Step = stepOf(tb.tape, d.Frame) // README's "(frame, step, what differs)": the step went unsaid
	}
	var err error
	res.MCPMissing, res.MCPNotServed, err = s.proxy.control.mcpVerdict(tb.tape)
	served := tb.served.Load()
	res.Unused, res.Served = tb.unused(), &served
	ctlServed, ctlUnused := s.proxy.control.ctl.counts()
	res.ControlServed, res.Unused = ctlServed, res.Unused+ctlUnused
	res.AnsweredLocally, res.LiveAllowed = tb.local.Load(), tb.passed.Load()
	return errors.Join(err, s.unreadable(tb))
}

// unreadable is what of the tape tb answered from did not read when the
// agent asked for it (a recorded answer, the control-API exchanges): the
// agent was given the error, and the run does not pass for the tape.
func (s *session) unreadable(tb *tapeBackend) error {
	var err error
	if e := tb.unreadable.Load(); e != nil {
		err = fmt.Errorf("%s: %w", tb.tape.Path(), *e)
	}
	if e := s.proxy.control.ctl.unreadable(); e != nil {
		err = errors.Join(err, fmt.Errorf("%s: the control-API exchanges do not read: %w", tb.tape.Path(), e))
	}
	return err
}

// recordedEnd returns how the recorded run ended, if the tape says (and
// its frame reads).
// stopSignal is the signal that stopped a recorded run: run.end's
// stopped, else SIGINT for a run interrupted (Ctrl-C); nil when none did.
func stopSignal(end tapefmt.RunEnd) os.Signal {
	switch end.Stopped {
	case "":
	case "SIGTERM":
		return syscall.SIGTERM
	case "SIGHUP":
		return syscall.SIGHUP
	case "SIGQUIT":
		return syscall.SIGQUIT
	default:
		return os.Interrupt
	}
	if end.Reason == tapefmt.ReasonInterrupted {
		return os.Interrupt
	}
	return nil
}

func recordedEnd(t *tapefmt.Tape) (tapefmt.RunEnd, bool) {
	end, ok, err := ReadEnd(t)
	return end, ok && err == nil
}

// ReadEnd returns how the recorded run ended, whether the tape says, and
// the error of a run.end frame that does not read.
func ReadEnd(t *tapefmt.Tape) (tapefmt.RunEnd, bool, error) {
	for f, err := range t.Frames(tapefmt.KindRunEnd) {
		if err != nil {
			return tapefmt.RunEnd{}, false, err
		}
		p, err := f.Decode()
		if err != nil {
			return tapefmt.RunEnd{}, false, err
		}
		if e, ok := p.(*tapefmt.RunEnd); ok {
			return *e, true, nil // the first run's end: a replay tape's own
		}
	}
	return tapefmt.RunEnd{}, false, nil
}

// diverged records the first divergence and reports it, then either stops
// the agent or, when the run goes live from here, syncs its tape per step.
func (s *session) diverged(d *Divergence, goLive bool) {
	s.div.CompareAndSwap(nil, d)
	s.emit(Event{Kind: EventDiverged, Div: d})
	if goLive {
		if s.tape != nil {
			s.tape.SetSync(tapefmt.SyncStep)
		}
		return
	}
	time.AfterFunc(divergenceGrace, func() { s.stopAgent(divergenceGrace) })
}

// forkOf returns the call at which a fork tape's overrides were applied,
// and the overrides; -1 when the tape is not a fork.
func forkOf(t *tapefmt.Tape) (int64, Overrides) {
	var o Overrides
	start, err := FirstRunStart(t)
	if err != nil {
		return -1, o
	}
	call, fork := start.ForkCall()
	if !fork || json.Unmarshal(start.Parent.Overrides, &o) != nil {
		return -1, o
	}
	return int64(call), o
}

// RedactedCommandError says that the recorded command cannot be run
// again as it was: secrets in its arguments were redacted on the tape.
type RedactedCommandError struct {
	Argv  []string
	Index int // the first argument that holds redact.Redacted
}

func (e *RedactedCommandError) Error() string {
	return fmt.Sprintf("the recorded command's argument %d (%q) had a secret redacted on the tape, so it cannot be run again as recorded; give the command after --",
		e.Index, e.Argv[e.Index])
}

// FirstRunStart returns the run.start payload of a tape.
func FirstRunStart(t *tapefmt.Tape) (*tapefmt.RunStart, error) {
	for f, err := range t.Frames(tapefmt.KindRunStart) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		if rs, ok := p.(*tapefmt.RunStart); ok {
			return rs, nil
		}
	}
	return nil, ErrNoRunStart
}

// ErrNoRunStart is a tape without a run.start frame: cut before its
// first frame, or not a run's (a damaged tape, exit 3).
var ErrNoRunStart = errors.New("tape has no run.start frame")

// recordedStdout is everything the recorded agent wrote to stdout.
func recordedStdout(t *tapefmt.Tape) ([]byte, error) {
	var out []byte
	for f, err := range t.Frames(tapefmt.KindOutput) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		if o, ok := p.(*tapefmt.Output); ok && o.Fd == 1 {
			out = append(out, o.Data...)
		}
	}
	return out, nil
}

// indexCalls makes the matcher for the tape at path (rules nil: RulesFor
// the tape, its sidecar's included) with the rules the tape keeps (kept)
// added, and checks the ignore paths it was given against the recorded
// requests.
func indexCalls(t *tapefmt.Tape, path string, rules *reqmatch.Rules, kept *tapefmt.MatchRules) (*Matcher, error) {
	if rules == nil {
		r, err := RulesFor(path, reqmatch.Rules{}, true)
		if err != nil {
			return nil, err
		}
		rules = r
	}
	recorded := reqmatch.FromTape(kept)
	if !recorded.Empty() {
		r := rules.Merge(recorded)
		if err := r.Compile(); err != nil {
			return nil, fmt.Errorf("the matching rules the tape was recorded with (run.start match): %w", err)
		}
		rules = &r
	}
	m, err := NewMatcher(t, rules)
	if err != nil {
		return nil, err
	}
	m.recorded = recorded.Ignore
	return m, m.checkIgnore()
}

// withTags is the tags of a source tape with those given over them, nil
// when there are none.
func withTags(source, given map[string]string) map[string]string {
	if len(source)+len(given) == 0 {
		return nil
	}
	m := maps.Clone(source)
	if m == nil {
		m = map[string]string{}
	}
	maps.Copy(m, given)
	return m
}
