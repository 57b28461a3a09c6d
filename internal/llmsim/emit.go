package llmsim

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"
)

// exchange is one chat-like request being answered.
type exchange struct {
	conv     *conversation
	ans      answer
	ids      ids
	inTokens int
	em       *emitter
}

// emitter writes a response chunk by chunk, with the answer's pacing, and
// carries out a reset or hang failure when its chunk comes.
type emitter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	closing <-chan struct{}
	fail    *failure
	pacing  pacing
	n       int  // chunks written
	started bool // status line sent
	dead    bool // reset, hung up, or the client left: write nothing more
}

func newEmitter(w http.ResponseWriter, ctx context.Context, closing <-chan struct{}, f *failure, p pacing) *emitter {
	return &emitter{w: w, rc: http.NewResponseController(w), ctx: ctx, closing: closing, fail: f, pacing: p}
}

// sse sets the headers of an event stream.
func (e *emitter) sse() {
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
}

// write sends one chunk and flushes it; it reports whether the response goes on.
func (e *emitter) write(b []byte) bool {
	if e.dead {
		return false
	}
	if f := e.fail; f != nil {
		switch e.n {
		case f.resetAfter:
			e.reset()
			return false
		case f.hangAfter:
			e.hang()
			return false
		}
	}
	delay := e.pacing.delayMS
	if e.n == 0 {
		delay = e.pacing.firstDelay
	}
	if !e.sleep(time.Duration(delay) * time.Millisecond) {
		e.dead = true
		return false
	}
	if !e.started {
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	if _, err := e.w.Write(b); err != nil {
		e.dead = true
		return false
	}
	e.rc.Flush() //nolint:errcheck // a recorder or a plain writer cannot flush; that is fine
	e.n++
	return true
}

// event sends one server-sent event; an empty name writes a bare data line.
func (e *emitter) event(name string, data []byte) bool {
	b := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	return e.write(b)
}

// body sends a whole non-streamed JSON body. When a failure is due after some
// chunks, the body is cut into pieces of the chunk size so it can strike
// mid-body.
func (e *emitter) body(b []byte) {
	if f := e.fail; f == nil || max(f.resetAfter, f.hangAfter) < 1 {
		e.w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		e.write(b)
		return
	}
	size := max(e.pacing.chunk, 1)
	for len(b) > 0 {
		n := min(size, len(b))
		if !e.write(b[:n]) {
			return
		}
		b = b[n:]
	}
}

func (e *emitter) sleep(d time.Duration) bool {
	if d <= 0 {
		return e.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-e.ctx.Done():
		return false
	case <-e.closing:
		return false
	}
}

// reset drops the connection with a TCP RST, as a crashed upstream or a
// middlebox would. Where the connection cannot be taken over (HTTP/2, a
// recorder) the handler aborts instead.
func (e *emitter) reset() {
	e.dead = true
	if e.started {
		e.rc.Flush() //nolint:errcheck // best effort before the reset
	}
	conn, _, err := e.rc.Hijack()
	if err != nil {
		if _, isRecorder := e.w.(interface{ Result() *http.Response }); isRecorder {
			return
		}
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) //nolint:errcheck // best effort: a FIN is a reset too, for HTTP
	}
	conn.Close()
}

// hang stops answering until the client gives up or the server closes, and
// then drops the connection (a plain return would send an empty 200).
func (e *emitter) hang() {
	e.dead = true
	select {
	case <-e.ctx.Done():
	case <-e.closing:
	}
	e.reset()
}
