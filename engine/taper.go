package engine

import (
	"context"
	"sync"
)

// taper writes a batch's control frames in order on a goroutine of its
// own, so that a recording tapes one operation (its body built, redacted,
// hashed and written) while the next one is staged: the two take about
// as long, and the agent waits for the batch's answer. The batch's
// handler waits for it before it answers (close), and before serving an
// operation that is taped at once (wait).
type taper struct {
	work chan func()
	busy sync.WaitGroup
	done chan struct{}
}

// taperQueue bounds the frames waiting: a tape slower than the staging
// holds the batch back rather than its bodies in memory.
const taperQueue = 64

func newTaper() *taper {
	t := &taper{work: make(chan func(), taperQueue), done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for f := range t.work {
			f()
			t.busy.Done()
		}
	}()
	return t
}

// add queues f, to run after everything queued before it.
func (t *taper) add(f func()) {
	t.busy.Add(1)
	t.work <- f
}

// wait returns when everything queued has run.
func (t *taper) wait() { t.busy.Wait() }

// close waits for everything queued and ends the goroutine.
func (t *taper) close() {
	close(t.work)
	<-t.done
}

type taperKey struct{}

func withTaper(ctx context.Context, t *taper) context.Context {
	return context.WithValue(ctx, taperKey{}, t)
}

// taperOf is the taper of the batch whose operation ctx serves, nil for
// an exchange that came alone.
func taperOf(ctx context.Context) *taper {
	t, _ := ctx.Value(taperKey{}).(*taper)
	return t
}
