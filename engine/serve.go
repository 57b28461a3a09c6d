package engine

import (
	"context"
	"encoding/hex"
	"net/http"
	"sync"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	// RunOptions describe the process served: Argv and Dir go on the tape
	// as its command and workspace; no process is started.
	RunOptions
	Tape      string
	Upstreams map[string]string
	Sync      tapefmt.SyncPolicy
	// Ready is told, once the proxy and the control API listen, what the
	// served process must set in its environment.
	Ready func(ServeInfo)
}

// ServeInfo is where a served process finds jukebox.
type ServeInfo struct {
	Tape   string `json:"tape"`
	TapeID string `json:"tape_id,omitempty"`
	Seed   int64  `json:"seed"`
	// Env are the variables to set, as `jukebox record` sets them for its
	// agent: JUKEBOX_CONTROL and its token, the providers' base URLs,
	// JUKEBOX_SEED and the rest.
	Env map[string]string `json:"env"`
	// Control is the run's control API, for a caller in this process to
	// call directly (jukebox mcp on its own tape) rather than over HTTP.
	Control controlapi.Run `json:"-"`
}

// Serve records a process that is already running, the way Record records
// the agent it starts: the same proxy, control API and tape, for a process
// (an agent using the Python SDK on its own) that points its SDKs at it.
// It serves until the process ends the run through the control API (POST
// /_jukebox/v1/end {"exit_code"}), which gives run.end its exit code, or
// until ctx is done: run.end is then interrupted, with no exit code
// (-1), and ctx's cause, if any, as its error.
func Serve(ctx context.Context, o ServeOptions) (*Result, error) {
	s, err := recording(RecordOptions{RunOptions: o.RunOptions, Tape: o.Tape, Upstreams: o.Upstreams, Sync: o.Sync}, true)
	if err != nil {
		return nil, err
	}
	s.outs = s.outputs()
	s.serveControl()
	if err := s.writeCaptureFiles(); err != nil {
		s.abandon(err)
		return nil, err
	}
	parent := ctx
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		mu    sync.Mutex
		ended *tapefmt.RunEnd
	)
	s.proxy.control.onEnd = func(e tapefmt.RunEnd) {
		mu.Lock()
		ended = &e
		mu.Unlock()
		stop()
	}
	if o.Ready != nil {
		info := ServeInfo{Tape: s.path, Seed: s.o.Seed, Env: s.runEnv(false), Control: s.proxy.control}
		if s.tape != nil {
			id := s.tape.ID()
			info.TapeID = hex.EncodeToString(id[:])
		}
		o.Ready(info)
	}
	<-ctx.Done()
	mu.Lock()
	defer mu.Unlock()
	end := tapefmt.RunEnd{ExitCode: -1, Reason: tapefmt.ReasonInterrupted}
	if ended != nil {
		end = *ended
	} else if cause := context.Cause(parent); cause != nil && cause != context.Canceled {
		end.Error = cause.Error() // why serving stopped with no exit code
	}
	return s.close(ctx, end, &Result{Tape: s.path}, nil)
}

// End ends a served run. Only Serve takes it; an agent that jukebox
// started ends when it exits.
func (c *control) End(_ context.Context, req controlapi.End) (controlapi.Ended, error) {
	if c.onEnd == nil {
		return controlapi.Ended{}, controlapi.Failf(http.StatusConflict, controlapi.TypeUnavailable,
			"this run ends when its agent exits (end is for jukebox serve)")
	}
	// The answer goes before the run ends, as it did over HTTP.
	defer c.onEnd(tapefmt.RunEnd{ExitCode: req.ExitCode, Error: req.Error})
	return controlapi.Ended{Ended: true}, nil
}
