package export

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Live exports a tape while it is recorded: a tapefmt.Observer that hands
// what is written to a goroutine of its own, which turns it into spans
// (the same converter as OTLP's, so a live export and a later one agree)
// and sends them in batches. The writer is never made to wait: a full
// queue drops, a receiver that refuses or is down drops, and Finish says
// how many spans were lost, for run.end.
type Live struct {
	ep      Endpoint
	o       Options
	events  chan liveEvent
	lost    atomic.Int64 // spans lost to a full event queue
	closed  atomic.Bool
	b       *batcher
	kick    chan struct{} // wakes the goroutine for Finish
	stop    chan struct{} // closed by Finish: the goroutine ends
	finishM sync.Mutex

	// The goroutine's own.
	conv  *converter
	sink  *sink
	id    [16]byte
	at    time.Time
	blobs map[tapefmt.Hash]*heldBlob
	order []tapefmt.Hash
	held  int // bytes in blobs

	errMu sync.Mutex
	err   error              // the first error, other than the exporter's
	me    sdkmetric.Exporter // the run's metric exporter, once it began
}

// fail keeps the first error.
func (l *Live) fail(err error) {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// MetricsNotTaken is the receiver's answer that it takes no metrics
// (Jaeger takes traces alone): the export sent none and is not failed for
// it. "" when it took them, or before the run began.
func (l *Live) MetricsNotTaken() string {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	if l.me == nil {
		return ""
	}
	return metricsNotTaken(l.me)
}

func (l *Live) firstErr() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.err
}

// liveEvent is one thing written: the start, a blob, a frame or the end.
type liveEvent struct {
	start  bool
	frame  *tapefmt.Frame
	hash   tapefmt.Hash
	blob   []byte
	finish *liveFinish
}

type liveFinish struct {
	end   tapefmt.RunEnd
	at    time.Time
	reply chan struct{}
}

// Bounds of what a live export holds: events queued, and bytes of bodies
// kept for frames yet to come.
const (
	liveQueue     = 8192
	liveBlobBytes = 64 << 20
	// LiveGrace is how long Finish waits, at most, for the spans still
	// queued to be sent when a run ends.
	LiveGrace = time.Second
)

// NewLive starts a live export to ep. Each export request is bounded (2 s
// unless ep says otherwise) and never retried.
func NewLive(ctx context.Context, ep Endpoint, o Options) (*Live, error) {
	ep.NoRetry = true
	if ep.Timeout == 0 {
		ep.Timeout = 2 * time.Second
	}
	te, err := ep.traceExporter(ctx)
	if err != nil {
		return nil, err
	}
	l := &Live{ep: ep, o: o, events: make(chan liveEvent, liveQueue), b: newBatcher(te, 2048, true),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), blobs: map[tapefmt.Hash]*heldBlob{}}
	go l.loop()
	return l, nil
}

// TraceID is the trace's id (the tape's), once the tape is created.
func (l *Live) TraceID() string { return trace.TraceID(l.id).String() }

// ObserveStart starts the trace: its id is the tape's.
func (l *Live) ObserveStart(id [16]byte, created time.Time) {
	l.id, l.at = id, created // before the goroutine reads them: the first event orders it
	l.send(liveEvent{start: true})
}

// ObserveBlob keeps a copy of a model call's or an MCP message's body for
// the frame that names it; file contents are not needed.
func (l *Live) ObserveBlob(lane string, h tapefmt.Hash, data []byte) {
	if !strings.HasSuffix(lane, " request") && !strings.HasSuffix(lane, " response") && !strings.HasPrefix(lane, "mcp ") {
		return
	}
	l.send(liveEvent{hash: h, blob: bytes.Clone(data)})
}

// ObserveFrame queues a copy of the frame.
func (l *Live) ObserveFrame(f tapefmt.Frame) {
	f.Payload = bytes.Clone(f.Payload)
	if !l.send(liveEvent{frame: &f}) && spanKind(f.Kind) {
		l.lost.Add(1)
	}
}

// spanKind: frames that start or end a span.
func spanKind(k tapefmt.Kind) bool {
	return k == tapefmt.KindLLMRequest || k == tapefmt.KindLLMResponse || k == tapefmt.KindMCP || k == tapefmt.KindRunStart
}

func (l *Live) send(e liveEvent) bool {
	if l.closed.Load() {
		return false
	}
	select {
	case l.events <- e:
		return true
	default:
		return false
	}
}

// Finish ends the run's spans with end, timed at (the offset its frame
// gets on the tape; negative: now), sends what is queued (waiting
// LiveGrace at most) and stops. It returns the spans lost, for run.end,
// and the first export error ("" when none). Later calls return the same.
func (l *Live) Finish(end tapefmt.RunEnd, at time.Duration) (lost int64, exportErr string) {
	l.finishM.Lock()
	defer l.finishM.Unlock()
	if !l.closed.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), LiveGrace)
		defer cancel()
		when := time.Now()
		if at >= 0 && !l.at.IsZero() {
			when = l.at.Add(at) // as the tape's run.end frame is read
		}
		fin := &liveFinish{end: end, at: when, reply: make(chan struct{})}
		select { // the queue may be full: wait for room, within the grace
		case l.events <- liveEvent{finish: fin}:
			select {
			case l.kick <- struct{}{}:
			default:
			}
			select {
			case <-fin.reply:
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		l.closed.Store(true)
		close(l.stop)                        // a loop still busy past the grace stops at its next event
		for n := len(l.events); n > 0; n-- { // what was never taken
			if e := <-l.events; e.frame != nil && spanKind(e.frame.Kind) {
				l.lost.Add(1)
			}
		}
		l.b.close(ctx)
	}
	lost = l.lost.Load() + l.b.dropped.Load() + l.b.failed.Load()
	if err := l.b.firstErr(); err != nil {
		exportErr = err.Error()
	} else if err := l.firstErr(); err != nil {
		exportErr = err.Error()
	}
	return lost, exportErr
}

// liveTick is how often the export's goroutine takes what was written:
// waking once per tick, not once per frame, it leaves the recording
// proxy's goroutines the processor in between (on a 2-core machine a
// wake-up per frame showed in the proxy's per-call latency).
const liveTick = 50 * time.Millisecond

func (l *Live) loop() {
	tick := time.NewTicker(liveTick)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-l.kick: // Finish: take the rest now
		case <-l.stop:
			return
		}
		for n := len(l.events); n > 0; n-- {
			select {
			case <-l.stop:
				return
			case e := <-l.events:
				if l.handle(e) {
					return
				}
			default: // Finish took the rest
			}
		}
	}
}

// handle takes one event; it reports the end of the export.
func (l *Live) handle(e liveEvent) bool {
	switch {
	case e.start:
	case e.blob != nil:
		l.keep(e.hash, e.blob)
	case e.frame != nil:
		l.frame(*e.frame)
	case e.finish != nil:
		if l.conv != nil {
			l.conv.runEnd(e.finish.at, &e.finish.end)
			if l.sink != nil {
				ctx, cancel := context.WithTimeout(context.Background(), LiveGrace)
				l.fail(l.sink.closeMetrics(ctx))
				cancel()
			}
		}
		close(e.finish.reply)
		return true
	}
	return false
}

func (l *Live) frame(f tapefmt.Frame) {
	if l.conv == nil {
		if f.Kind != tapefmt.KindRunStart {
			return
		}
		p, err := f.Decode()
		if err != nil {
			l.fail(err)
			return
		}
		rs := p.(*tapefmt.RunStart)
		me, err := l.ep.metricExporter(context.Background())
		if err != nil {
			l.fail(err)
			return
		}
		l.errMu.Lock()
		l.me = me
		l.errMu.Unlock()
		if l.sink, err = newSink(trace.TraceID(l.id), serviceOf(l.o, rs), rs, l.b, me, 10*time.Second); err != nil {
			l.fail(err)
			return
		}
		l.conv = newConverter(l.o, l.id, l.at, l.take, l.sink.span, l.sink.measure)
	}
	l.fail(l.conv.frame(f))
}

// keep holds a body until its frame comes (as many times as it was put:
// identical bodies share a hash), the oldest let go beyond liveBlobBytes.
func (l *Live) keep(h tapefmt.Hash, data []byte) {
	if b, ok := l.blobs[h]; ok {
		b.n++
		return
	}
	l.blobs[h], l.held = &heldBlob{data: data, n: 1}, l.held+len(data)
	l.order = append(l.order, h)
	for l.held > liveBlobBytes && len(l.order) > 0 {
		l.drop(l.order[0])
		l.order = l.order[1:]
	}
}

// take hands a kept body to the converter.
func (l *Live) take(h tapefmt.Hash) []byte {
	b, ok := l.blobs[h]
	if !ok {
		return nil
	}
	if b.n--; b.n == 0 {
		l.drop(h)
		if len(l.blobs) == 0 {
			l.order = l.order[:0]
		}
	}
	return b.data
}

func (l *Live) drop(h tapefmt.Hash) {
	if b, ok := l.blobs[h]; ok {
		l.held -= len(b.data)
		delete(l.blobs, h)
	}
}

// heldBlob is a body kept for n frames to come.
type heldBlob struct {
	data []byte
	n    int
}
