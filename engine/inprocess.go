package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// InProcess is a run whose agent is the calling program itself, with no
// child process: its HTTP requests are handed to ServeHTTP (as a forward
// proxy gets them: absolute URLs, https://api.openai.com/v1/...) by an
// http.RoundTripper of its own (engine/jukeboxtest's Recorder). Recording,
// they go to their upstreams through the recording proxy and onto a tape
// as a child's calls would; replaying, they are answered from the tape by
// the matcher jukebox replay uses. Close ends the run.
type InProcess struct {
	s    *session
	tb   *tapeBackend // replay only
	t    *tapefmt.Tape
	from string
}

// RecordInProcess opens a tape at o.Tape (with its run.start; o.Argv may
// be empty) and a recording proxy whose handler is the returned run's
// ServeHTTP: the proxy's listener is never served.
func RecordInProcess(o RecordOptions) (*InProcess, error) {
	s, err := recording(o, true)
	if err != nil {
		return nil, err
	}
	s.proxy.control.mode = s.mode
	return &InProcess{s: s}, nil
}

// ReplayInProcess opens the tape o.From and answers requests handed to
// ServeHTTP from it, as Replay does (o.Rules, o.Repeat; the rules the tape
// keeps added); a request it does not hold is answered with an error and
// is the run's Divergence. Nothing is recorded and nothing goes live.
func ReplayInProcess(o ReplayOptions) (*InProcess, error) {
	o.Argv = []string{"-"} // the calling program: no recorded command is wanted
	t, m, err := openSource(o.From, o.Remote, &o.RunOptions, o.Rules)
	if err != nil {
		return nil, err
	}
	m.repeat = o.Repeat
	s := &session{o: o.RunOptions, mode: tapefmt.ModeReplay}
	tb := &tapeBackend{m: m, tape: t, speed: o.Speed, onDiv: func(d *Divergence) { s.div.CompareAndSwap(nil, d) }}
	tb.forkCall, tb.overrides = forkOf(t)
	if s.proxy, err = newProxy(tb, nil, s.emit); err != nil {
		m.stop()
		t.Close()
		return nil, err
	}
	s.proxy.control.mode = s.mode
	return &InProcess{s: s, tb: tb, t: t, from: o.From}, nil
}

// Tape is the tape the run writes (recording) or reads (replay).
func (r *InProcess) Tape() string {
	if r.tb != nil {
		return r.from
	}
	return r.s.path
}

// ServeHTTP serves one request of the program: recorded and sent to its
// upstream, or answered from the tape.
func (r *InProcess) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.s.proxy.ServeHTTP(w, req)
}

// Close ends the run, as an agent that ended with exitCode (recording:
// run.end is written, the tape closed and read back; a tape that does not
// is a *TapeError). A replay's Result says what it found (Divergence,
// Unused, NotReproduced).
func (r *InProcess) Close(exitCode int) (*Result, error) {
	res := &Result{Tape: r.Tape()}
	ctx := context.Background()
	res, err := r.s.close(ctx, tapefmt.RunEnd{ExitCode: exitCode}, res, nil)
	if r.tb == nil {
		return res, err
	}
	err = errors.Join(err, r.s.replayed(res, r.tb))
	r.tb.m.stop()
	if end, ok := recordedEnd(r.t); ok {
		same := end.ExitCode == exitCode && end.Signal == ""
		res.ExitSame = &same
	}
	if cerr := r.t.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("%s: %w", r.Tape(), cerr))
	}
	return res, err
}
