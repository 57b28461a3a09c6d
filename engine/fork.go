package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ForkOptions configure Fork.
type ForkOptions struct {
	RunOptions        // an empty Argv runs the parent's command; Seed 0 hands the parent's seed
	Parent     string // the parent tape
	// Remote opens a parent a URL names (a store's tape); nil reads files only.
	Remote tapefmt.RemoteOpener
	// Frame is where to drop the needle: the fork happens at the first
	// llm.request frame at or after it.
	Frame     uint64
	Overrides Overrides
	Tape      string // the fork's tape
	Upstreams map[string]string
	Rules     *reqmatch.Rules // as in replay
	// LiveHosts are the hosts whose requests go live before the fork
	// frame too (as in replay); every other request before it that is
	// not on the parent tape is a divergence.
	LiveHosts HostPatterns
}

// Fork re-runs the agent with every model call before the fork frame
// answered from the parent tape, the call at the fork frame sent live with
// the overrides applied, and every call after it live, with the overrides
// too under ScopeAll (the default when Scope is empty) when it goes to the
// fork call's endpoint. The fork's tape
// names its parent (chain head and frame). When the agent diverges before
// the fork frame, the run stops and Result.Divergence says where, as replay does.
func Fork(ctx context.Context, o ForkOptions) (*Result, error) {
	roots := runca.StartRoots(envMap(o.baseEnv())) // read while the parent is indexed
	pre := keepAhead(o.RunOptions)
	defer pre.release()
	t, m, err := openSource(o.Parent, o.Remote, &o.RunOptions, o.Rules)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	defer m.stop()
	at, err := forkPoint(t, o.Frame)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Parent, err)
	}
	if o.Overrides.Scope == "" {
		o.Overrides.Scope = ScopeAll
	}
	if err := checkOverrides(m, at, o.Overrides); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Parent, err)
	}
	s := &session{o: o.RunOptions, mode: tapefmt.ModeFork, roots: roots, pre: pre}
	return s.fork(ctx, o, t, m, at)
}

// checkOverrides applies the overrides to the recorded request at the
// fork frame, before the agent starts: a field to set that it lacks is an
// OverrideError then, not a failed run.
func checkOverrides(m *Matcher, at uint64, o Overrides) error {
	c := m.call(at)
	if c == nil {
		return nil
	}
	m.mu.Lock()
	body, err := m.recordedBody(c)
	m.mu.Unlock()
	if err != nil {
		return err
	}
	if _, err := o.Apply(c.Request.Provider, c.Request.Path, body, true); err != nil {
		return &OverrideError{Frame: at, Err: err}
	}
	return nil
}

// forkPoint is the first llm.request frame at or after frame.
func forkPoint(t *tapefmt.Tape, frame uint64) (uint64, error) {
	reqs, err := requestFrames(t)
	if err != nil {
		return 0, err
	}
	i := requestsBefore(reqs, frame)
	if i == len(reqs) {
		return 0, fmt.Errorf("%w at or after frame %d (the tape has %d frames): fork at an llm.request frame", ErrNoForkPoint, frame, t.Len())
	}
	return reqs[i], nil
}

// ErrNoForkPoint: a fork frame with no model call at or after it, so
// nothing to fork (a usage error, not a failed run).
var ErrNoForkPoint = errors.New("no model call")

// requestFrames lists the frames of a tape's llm.requests, in order.
func requestFrames(t *tapefmt.Tape) ([]uint64, error) {
	var reqs []uint64
	for f, err := range t.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			return nil, err
		}
		reqs = append(reqs, f.Seq)
	}
	return reqs, nil
}

// requestsBefore counts the requests of reqs (requestFrames) before frame.
func requestsBefore(reqs []uint64, frame uint64) int {
	i, _ := slices.BinarySearch(reqs, frame)
	return i
}

func (s *session) fork(ctx context.Context, o ForkOptions, t *tapefmt.Tape, m *Matcher, at uint64) (*Result, error) {
	start, _ := FirstRunStart(t)
	explicit, fromTape := ForkUpstreams(o.Upstreams, s.baseEnv(), start.Upstream)
	ups := resolveUpstreams(explicit, envMap(s.baseEnv()))
	fb := &forkBackend{tapeBackend: tapeBackend{m: m, tape: t}, at: at, over: o.Overrides, live: newLive(ups, s.o)}
	fb.world = &openWorld{hosts: o.LiveHosts, upstreams: ups, live: fb.live}
	fb.forkCall, fb.tapeBackend.overrides = forkOf(t) // a fork of a fork replays its parent's fork too
	fb.onDiv = func(d *Divergence) { s.diverged(d, false) }
	over, _ := json.Marshal(o.Overrides)
	reqs, err := requestFrames(t)
	if err != nil {
		return nil, err
	}
	calls := uint64(requestsBefore(reqs, at))
	rs := s.runStart(ups)
	rs.Parent = &tapefmt.ParentRef{Tape: t.Head().String(), Frame: at, Call: calls, Path: parentPath(cmp.Or(o.SourceName, o.Parent)), Overrides: over}
	// The prefix is answered from the parent and can be had again: it is
	// not synced. From the fork call on, calls are live and synced per step.
	if err := s.openTape(o.Tape, tapefmt.SyncNever, rs); err != nil {
		return nil, err
	}
	if s.tape != nil {
		fb.onFork = func() { s.tape.SetSync(tapefmt.SyncStep) }
	}
	if s.proxy, err = newProxy(fb, s.tape, s.emit); err != nil {
		s.abandon(err)
		return nil, err
	}
	s.proxy.guard = s.guard()

	res, err := s.run(ctx, true)
	if res != nil {
		err = errors.Join(err, s.unreadable(&fb.tapeBackend))
		fb.mu.Lock()
		forked := fb.forked || fb.diverged
		fb.mu.Unlock()
		if !forked && s.div.Load() == nil && err == nil && res.End.Reason == "" { // stopped by the user: not a divergence
			// The agent ended on the parent's answers alone: the fork's
			// tape names overrides it never applied.
			d := &Divergence{Frame: int64(at), Step: stepOf(t, int64(at)), Ended: EndText(res.End), Actual: "(none: the agent ended)"}
			if c := m.call(at); c != nil {
				d.Endpoint = c.Request.Method + " " + c.Request.Path
			}
			s.div.CompareAndSwap(nil, d)
		}
		res.Divergence = s.div.Load()
		for _, p := range fromTape {
			if res.UpstreamFromTape == nil {
				res.UpstreamFromTape = map[string]string{}
			}
			res.UpstreamFromTape[p] = ups[p]
		}
	}
	return res, err
}

// forkBackend serves the parent's answers up to the fork frame, then goes live.
type forkBackend struct {
	tapeBackend
	at   uint64 // the llm.request frame of the parent where the fork happens
	over Overrides
	live backend // the origin a request names, or its provider's upstream

	forked   bool   // the fork call has been made: everything is live now
	endpoint string // the fork call's method and path
	onFork   func() // called once, at the fork call
}

// prepare decides how x is answered before its request is recorded, and
// applies the overrides to the call at the fork frame.
func (f *forkBackend) prepare(x *exchange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.diverged {
		return
	}
	f.tapeBackend.prepare(x) // the parent's own overrides, in a fork of a fork
	if f.forked || telemetry(x) || f.world.hosts.Match(exchangeHost(x, f.world.upstreams)) {
		if f.forked && !x.plain && f.over.reaches() && x.req.Method+" "+x.path == f.endpoint {
			// Every later call to the fork call's endpoint gets the overrides.
			x.body, _ = f.over.Apply(x.provider.Name, x.path, x.body, false)
		}
		return
	}
	c, d := f.m.Match(x.matchRequest())
	switch {
	case d != nil:
		x.div = d
	case c.Seq < f.at:
		x.served = c
	case c.Seq == f.at:
		body, err := f.over.Apply(x.provider.Name, x.path, x.body, true)
		if err != nil {
			x.div = &Divergence{Endpoint: x.req.Method + " " + x.path, Frame: int64(c.Seq), Actual: err.Error()}
			break
		}
		x.body, f.forked, f.endpoint = body, true, x.req.Method+" "+x.path
		if f.onFork != nil {
			f.onFork()
		}
	default:
		x.div = &Divergence{Endpoint: x.req.Method + " " + x.path, Frame: int64(f.at),
			Actual: pretty(x.body), Diff: fmt.Sprintf("the agent skipped the call at frame %d and asked for the one at frame %d", f.at, c.Seq)}
	}
	if x.div != nil {
		f.diverged = true
	}
}

func (f *forkBackend) respond(w http.ResponseWriter, x *exchange) answer {
	if x.div == nil && x.served == nil {
		if a, ok := f.outside(w, x); ok {
			return a
		}
	}
	switch {
	case x.div != nil:
		f.onDiv(x.div)
		apiError(w, http.StatusBadRequest, "jukebox fork: this request is not on the parent tape before the fork frame; see the divergence report")
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadRequest, Error: "diverged"}}
	case x.served != nil:
		return f.serve(w, x, x.served)
	}
	f.mu.Lock()
	diverged := f.diverged
	f.mu.Unlock()
	if diverged {
		apiError(w, http.StatusBadRequest, "jukebox fork: stopped after a divergence")
		return answer{resp: tapefmt.LLMResponse{Status: http.StatusBadRequest, Error: "diverged"}}
	}
	return f.live.respond(w, x)
}

// preparer is a backend that looks at a call before it is recorded.
type preparer interface{ prepare(x *exchange) }

var _ preparer = (*forkBackend)(nil)

// ForkName checks a fork's name (fork --name, the turntable's form): a
// file name's stem of ASCII letters, digits and . _ - (at most 64), not
// starting with a dot, or "" for none. It names the fork's run and tape.
func ForkName(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if len(v) > 64 || strings.HasPrefix(v, ".") || strings.IndexFunc(v, func(r rune) bool {
		return !(r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return "", fmt.Errorf("name %q: ASCII letters, digits, . _ and - only (it names the fork's tape)", v)
	}
	return v, nil
}
