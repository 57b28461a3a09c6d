package tapestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"syscall"
	"time"
)

// Nothing waits forever on a store. Each request has a deadline,
// requestTimeout (JUKEBOX_STORE_REQUEST_TIMEOUT, default 20 s), plus, for
// a request that carries or fetches n bytes, a twentieth of it a MiB (a
// second a MiB by default: a link slower than 1 MiB/s is taken for a
// stall). A request that stalls or fails in a way that may pass (a
// timeout, a connection refused or reset, a 5xx) is tried again after a
// pause that doubles (attempts in all), while the caller's context lasts.
// An upload is watched the same way: when no byte has moved for a part's
// deadline it is given up (and tried again).

// requestTimeout is the deadline of one request that moves few bytes.
var requestTimeout = envDuration("JUKEBOX_STORE_REQUEST_TIMEOUT", 20*time.Second)

// attempts is how many times a request is tried; backoff is the first pause.
const attempts = 3

var backoff = 250 * time.Millisecond

// RequestTimeout is the deadline of one small request to a store.
func RequestTimeout() time.Duration { return requestTimeout }

// envDuration reads a duration from the environment (Go's syntax, or a
// number of seconds); one that does not read is the default, said once on
// stderr.
func envDuration(name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		var secs float64
		if _, serr := fmt.Sscanf(v, "%g", &secs); serr != nil || secs <= 0 {
			fmt.Fprintf(os.Stderr, "jukebox: warning: %s=%q is not a duration (such as 20s); %s is used\n", name, v, def)
			return def
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d <= 0 {
		return def
	}
	return d
}

// readTimeout bounds a request that moves n bytes.
func readTimeout(n int64) time.Duration {
	return requestTimeout + time.Duration(n>>20)*(requestTimeout/20)
}

// errStalled is the cause of a request given up at its deadline.
var errStalled = errors.New("the store did not answer in time")

// StallError says a store request was given up at its deadline.
type StallError struct {
	What  string
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%s: the store did not answer in %s (JUKEBOX_STORE_REQUEST_TIMEOUT)", e.What, e.After.Round(time.Millisecond))
}

func (e *StallError) Unwrap() error { return errStalled }

// retryable reports whether err may pass if the request is made again.
func retryable(err error) bool {
	if errors.Is(err, errStalled) {
		return true
	}
	if errors.Is(err, io.EOF) && !cutConnection(err) {
		return false // a listing's end
	}
	switch codeOf(err) {
	case codeNotFound, codeDenied, codeExists, codeInvalid, codeRetried:
		return false
	}
	return !errors.Is(err, context.Canceled)
}

// cutConnection reports a request whose connection failed under it:
// refused, reset, or closed before the answer came (a *url.Error over
// EOF: fake-gcs-server killed mid-upload). Tried again as a stall is; not
// one the driver's own client tried again already (S3's).
func cutConnection(err error) bool {
	var ue *url.Error
	if !errors.As(err, &ue) || codeOf(err) == codeRetried {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// try runs op, each attempt with the deadline d (none when d is 0: op
// watches for stalls itself), and tries a stalled or failed attempt again
// with backoff while ctx lasts. what names the request in a stall's
// error.
func try[T any](ctx context.Context, what string, d time.Duration, op func(context.Context) (T, error)) (T, error) {
	var zero T
	pause := backoff
	for i := 1; ; i++ {
		actx, cancel := context.WithCancel(ctx)
		if d > 0 {
			actx, cancel = context.WithTimeoutCause(ctx, d, &StallError{What: what, After: d})
		}
		v, err := op(actx)
		stalled := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return v, nil
		}
		if stalled {
			err = &StallError{What: what, After: d}
		}
		if ctx.Err() != nil {
			return zero, fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		if i >= attempts || !retryable(err) {
			if i > 1 {
				// The wait the error names was waited each time.
				err = fmt.Errorf("%w (tried %d times)", err, i)
			}
			return zero, err
		}
		select {
		case <-ctx.Done():
			return zero, fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		case <-time.After(pause):
		}
		pause *= 2
	}
}

// next is it.Next with a request's deadline (a page of a listing is one
// request), tried again when it stalls.
func next(ctx context.Context, what string, it *listIterator) (*listObject, error) {
	return try(ctx, what, requestTimeout, func(ctx context.Context) (*listObject, error) { return it.Next(ctx) })
}

// readAll is b.ReadAll of a small object with a request's deadline, tried
// again when it stalls.
func readAll(ctx context.Context, what string, b *bucket, key string) ([]byte, error) {
	return try(ctx, what, requestTimeout, func(ctx context.Context) ([]byte, error) { return b.ReadAll(ctx, key) })
}

// watchdog cancels a context when nothing has moved for d: tick is called
// at each move. stop ends it; stalled reports whether it fired.
type watchdog struct {
	mu    sync.Mutex
	last  time.Time
	fired bool
	done  chan struct{}
	once  sync.Once
}

func watch(cancel context.CancelCauseFunc, what string, d time.Duration) *watchdog {
	w := &watchdog{last: time.Now(), done: make(chan struct{})}
	go func() {
		t := time.NewTicker(max(d/8, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case now := <-t.C:
				w.mu.Lock()
				idle := now.Sub(w.last)
				if idle >= d {
					w.fired = true
				}
				w.mu.Unlock()
				if idle >= d {
					cancel(&StallError{What: what, After: d})
					return
				}
			}
		}
	}()
	return w
}

func (w *watchdog) tick() {
	w.mu.Lock()
	w.last = time.Now()
	w.mu.Unlock()
}

func (w *watchdog) stop() bool {
	w.once.Do(func() { close(w.done) })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}
