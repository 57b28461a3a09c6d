package jukeboxtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// RecordModeEnv names the variable that sets the recording mode of
// NewRecorder and Open when no RecordMode option is given (default once):
// set it to none in CI, so that a missing tape fails instead of recording.
const RecordModeEnv = "JUKEBOX_RECORD_MODE"

// Recording modes, as jukebox record --record-mode and vcrpy name them.
const (
	ModeOnce = "once" // record when the tape is missing, replay it otherwise
	ModeAll  = "all"  // record again, replacing the tape
	ModeNone = "none" // replay only: a missing tape is an error
)

// Recorder is an http.RoundTripper that records a Go agent's HTTP calls
// (model calls and plain HTTP alike) onto a .jbx tape, or replays them
// from it, in process: what go-vcr's recorder does, on jukebox's tape.
// Recording, each request goes through jukebox's recording proxy to its
// upstream (streamed answers relayed chunk by chunk, with their timing)
// and is written as jukebox record writes a child's (secrets dropped,
// hash chain, index); replaying, it is matched as jukebox replay matches
// (reqmatch's canonical body and order per endpoint, the rules the tape
// keeps) and answered from the tape, and nothing leaves the process. A
// request the tape does not hold gets an error answer and is the run's
// divergence. Its tapes open with jukebox show, ls, diff and verify.
type Recorder struct {
	run       *engine.InProcess
	mode      string // what this Recorder does: record or replay
	path, tmp string

	mu     sync.Mutex
	closed bool
}

// RecorderOption configures Open and NewRecorder.
type RecorderOption func(*recorderConfig)

type recorderConfig struct {
	mode   string
	routes map[string]string
}

// RecordMode sets the recording mode: ModeOnce, ModeAll or ModeNone
// (default: $JUKEBOX_RECORD_MODE, else once).
func RecordMode(mode string) RecorderOption {
	return func(c *recorderConfig) { c.mode = mode }
}

// Route sends the requests the agent makes to host (HOST or HOST:PORT)
// to the base URL url while recording, recorded under the host the agent
// asked for, as jukebox record --route does (tests: a scripted model).
func Route(host, url string) RecorderOption {
	return func(c *recorderConfig) {
		if c.routes == nil {
			c.routes = map[string]string{}
		}
		c.routes[host] = url
	}
}

// Open starts recording onto tape (a path, or a file name in
// testdata/tapes/) or replaying it, as the mode says. Close ends it.
func Open(tape string, opts ...RecorderOption) (*Recorder, error) {
	c := recorderConfig{mode: os.Getenv(RecordModeEnv)}
	for _, o := range opts {
		o(&c)
	}
	if c.mode == "" {
		c.mode = ModeOnce
	}
	path := tape
	if filepath.Dir(tape) == "." {
		if _, err := os.Stat(tape); err != nil {
			path = filepath.Join(TapesDir, tape)
		}
	}
	_, err := os.Stat(path)
	exists := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	case c.mode != ModeOnce && c.mode != ModeAll && c.mode != ModeNone:
		return nil, fmt.Errorf("jukeboxtest: record mode %q: want once, all or none", c.mode)
	case c.mode == ModeNone && !exists:
		return nil, fmt.Errorf("jukeboxtest: %s: no such tape, and the record mode is none (%s): record it with the mode once", path, RecordModeEnv)
	case c.mode == ModeNone || c.mode == ModeOnce && exists:
		run, err := engine.ReplayInProcess(engine.ReplayOptions{From: path})
		if err != nil {
			return nil, err
		}
		return &Recorder{run: run, mode: "replay", path: path}, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	// The tape is written beside its place and renamed there by Close,
	// so a run that fails half way leaves the old tape (or none).
	tmp := path + ".recording"
	os.Remove(tmp)
	run, err := engine.RecordInProcess(engine.RecordOptions{Tape: tmp,
		RunOptions: engine.RunOptions{Name: filepath.Base(path), Routes: c.routes, RecordMode: c.mode}})
	if err != nil {
		return nil, err
	}
	return &Recorder{run: run, mode: "record", path: path, tmp: tmp}, nil
}

// NewRecorder is Open for a test: the Recorder is closed when t ends,
// and a replay that did not reproduce the recording (a request the tape
// does not hold, with its frame and the first field that differs; a
// recorded call never asked for) fails t. A recording is kept only when
// t passed, so a test that failed while recording records again next
// time.
func NewRecorder(t testing.TB, tape string, opts ...RecorderOption) *Recorder {
	t.Helper()
	r, err := Open(tape, opts...)
	if err != nil {
		t.Fatalf("jukeboxtest: %v", err)
		return nil
	}
	t.Cleanup(func() {
		if t.Failed() && r.Recording() {
			r.discard()
			return
		}
		res, err := r.Close()
		if err != nil {
			t.Errorf("jukeboxtest: %v", err)
		}
		if res != nil && !r.Recording() {
			if why := res.NotReproduced(); why != "" {
				if res.Divergence != nil {
					why = res.Divergence.Error()
				}
				t.Errorf("jukeboxtest: %s: the test did not reproduce the recording: %s", r.path, why)
			}
		}
	})
	return r
}

// Recording says whether r records (else it replays).
func (r *Recorder) Recording() bool { return r.mode == "record" }

// Tape is the tape r records or replays.
func (r *Recorder) Tape() string { return r.path }

// Client is an http.Client whose transport is r.
func (r *Recorder) Client() *http.Client { return &http.Client{Transport: r} }

// Close ends the run: a recording's tape is closed, read back and put in
// its place; a replay's Result says whether it reproduced the recording
// (Result.NotReproduced).
func (r *Recorder) Close() (*engine.Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("jukeboxtest: the recorder is closed already")
	}
	r.closed = true
	res, err := r.run.Close(0)
	if r.Recording() {
		if err == nil {
			err = os.Rename(r.tmp, r.path)
		}
		if err != nil {
			os.Remove(r.tmp)
		}
		res.Tape = r.path
	}
	return res, err
}

// discard ends a recording and keeps nothing of it.
func (r *Recorder) discard() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		r.run.Close(1)
		os.Remove(r.tmp)
	}
}

// RoundTrip serves req through the run: recorded and sent on, or answered
// from the tape. The answer's body streams as the handler writes it.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, errors.New("jukeboxtest: a request after the recorder was closed: " + req.Method + " " + req.URL.String())
	}
	if !req.URL.IsAbs() {
		return nil, errors.New("jukeboxtest: a request without an absolute URL: " + req.URL.String())
	}
	in := req.Clone(req.Context())
	if in.Body == nil {
		in.Body = http.NoBody
	}
	w := newPipeWriter(req)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					w.fail(fmt.Errorf("jukeboxtest: %v", v))
					return
				}
				w.fail(errors.New("jukeboxtest: connection reset (as recorded)"))
			}
		}()
		r.run.ServeHTTP(w, in)
		w.end()
	}()
	return w.response()
}

// pipeWriter is the http.ResponseWriter of one request served in
// process: the header goes to RoundTrip once written, the body through a
// pipe the caller reads as it comes.
type pipeWriter struct {
	req    *http.Request
	header http.Header // the handler's
	sent   http.Header // a copy as it was when the header was written
	code   int
	pr     *io.PipeReader
	pw     *io.PipeWriter
	ready  chan struct{} // closed once the header is written, or the handler ended without one
	once   sync.Once
	err    error       // why no header came (set before ready closes)
	stop   func() bool // stops closing the body when the request's context ends
}

func newPipeWriter(req *http.Request) *pipeWriter {
	pr, pw := io.Pipe()
	w := &pipeWriter{req: req, header: http.Header{}, pr: pr, pw: pw, ready: make(chan struct{})}
	w.stop = context.AfterFunc(req.Context(), func() { pr.CloseWithError(req.Context().Err()) })
	return w
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.code = code
		w.sent = w.header.Clone() // the handler may go on changing its map (trailers)
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b)
}

// Flush does nothing: every Write reaches the reader as it is made.
func (w *pipeWriter) Flush() {}

// end closes the body after a handler that returned.
func (w *pipeWriter) end() {
	w.WriteHeader(http.StatusOK)
	w.pw.Close()
	w.stop()
}

// fail ends the body (or, before the header, the request) with err.
func (w *pipeWriter) fail(err error) {
	w.once.Do(func() {
		w.err = err
		close(w.ready)
	})
	w.pw.CloseWithError(err)
	w.stop()
}

// response waits for the header and returns the response, its body the
// pipe.
func (w *pipeWriter) response() (*http.Response, error) {
	select {
	case <-w.ready:
	case <-w.req.Context().Done():
		w.pr.CloseWithError(w.req.Context().Err())
		return nil, w.req.Context().Err()
	}
	if w.err != nil {
		return nil, w.err
	}
	return &http.Response{Status: fmt.Sprintf("%d %s", w.code, http.StatusText(w.code)), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: w.sent, Body: w.pr, ContentLength: -1,
		Request: w.req}, nil
}
