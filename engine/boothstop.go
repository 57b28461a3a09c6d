package engine

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
)

// DefaultGrace is how long a booth's agent has, after the first stop
// signal was passed on to it, to exit before it is killed
// (BoothOptions.Grace).
const DefaultGrace = 10 * time.Second

// ErrUndecided, wrapped, is what BoothOptions.Ask returns when it got no
// decision: its input ended, or the answer was neither yes nor no (a y
// where a code was asked for). The transaction is kept open, nothing
// applied, nothing discarded (BoothResult.Undecided says why).
var ErrUndecided = errors.New("no decision")

// ErrInterrupted, wrapped, is what BoothOptions.Ask returns when a stop
// signal (Ctrl-C, Ctrl-\, SIGTERM) came instead of an answer: the
// transaction is kept open, as for ErrUndecided, and the run counts as
// interrupted (BoothResult.Interrupted).
var ErrInterrupted = errors.New("interrupted")

// A stopper watches the signals handed to a booth run while its agent
// runs. The first is passed on to the agent (Ctrl-C reaches it as it
// would without the booth) and the agent gets grace to exit; a second, or
// the end of grace, cancels the run, which kills the agent.
type stopper struct {
	fwd     chan os.Signal // to the sandbox, which passes them on
	done    chan struct{}
	wg      sync.WaitGroup
	stopped bool // a signal came; read once the watch has ended
}

// stopOnSignals starts watching sigs; nil never stops the run.
func stopOnSignals(sigs <-chan os.Signal, grace time.Duration, cancel context.CancelFunc) *stopper {
	if grace <= 0 {
		grace = DefaultGrace
	}
	s := &stopper{fwd: make(chan os.Signal, 1), done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var timer *time.Timer
		defer func() {
			if timer != nil {
				timer.Stop()
			}
		}()
		for {
			select {
			case sig := <-sigs:
				if timer != nil {
					cancel() // the second: at once
					continue
				}
				s.stopped = true
				s.fwd <- sig
				timer = time.AfterFunc(grace, cancel)
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// stop ends the watch, the agent having exited, and reports whether a
// signal came. Signals from now on are left on the channel for the
// question (BoothOptions.Ask) to hear.
func (s *stopper) stop() bool {
	close(s.done)
	s.wg.Wait()
	return s.stopped
}
