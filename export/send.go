package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Sent says what an export of tapes sent.
type Sent struct {
	Tapes []SentTape
	Spans int64 // spans the receiver took
	// Failed are spans in batches the receiver refused, after the
	// exporter's retries.
	Failed int64
	// Unread are the tapes not sent because they do not read whole
	// (damaged, torn, not a tape): none of their spans went.
	Unread []UnreadTape
}

// UnreadTape is a tape an export left out, and why.
type UnreadTape struct {
	Path string
	Err  error
}

// SentTape is one tape's part of an export.
type SentTape struct {
	Path    string
	TraceID string // the tape's id: find the trace by it
	Spans   int
	// MetricsNotTaken is the receiver's answer that it takes no metrics
	// (MetricsNotTaken), "" when it took them.
	MetricsNotTaken string
}

// OTLP sends tapes to a receiver: each a trace whose id is the tape's id,
// its spans at their recorded times, and its model calls' metrics. Each
// tape is checked whole first: one that does not read (damaged, torn,
// not a tape) is left out (Sent.Unread), none of its spans sent, and the
// rest go. It returns what was sent; the error is the receiver's first
// refusal (the exporter retries first, as its configuration says).
// progress, if set, is told of each tape sent.
func OTLP(ctx context.Context, paths []string, ep Endpoint, o Options, progress func(SentTape)) (Sent, error) {
	var sent Sent
	te, err := ep.traceExporter(ctx)
	if err != nil {
		return sent, fmt.Errorf("otlp: %w", err)
	}
	b := newBatcher(te, 4096, false)
	var tapeErr error
	for _, path := range paths {
		if err := readsWhole(path, o.Remote); err != nil {
			sent.Unread = append(sent.Unread, UnreadTape{path, err})
			continue
		}
		st, err := sendTape(ctx, path, ep, o, b)
		if err != nil {
			tapeErr = err // read whole a moment ago: the receiver or the file system failed
			break
		}
		sent.Tapes = append(sent.Tapes, st)
		if progress != nil {
			progress(st)
		}
	}
	b.close(ctx)
	sent.Spans, sent.Failed = b.exported.Load(), b.failed.Load()
	var spanErr error
	if err := b.firstErr(); err != nil {
		spanErr = fmt.Errorf("otlp: the receiver refused %d of %d spans: %w", sent.Failed, sent.Failed+sent.Spans, err)
	}
	// Both when both failed: a receiver that is down failed the metrics
	// and every span, and only the metrics were said.
	if spanErr != nil && tapeErr != nil {
		return sent, fmt.Errorf("%w; %w", spanErr, tapeErr)
	}
	return sent, cmp.Or(spanErr, tapeErr)
}

// readsWhole checks the tape at path as jukebox verify does (frames,
// chain, blobs), so that a damaged one sends nothing: converted as it
// was read, it sent the spans before its damage.
func readsWhole(path string, remote tapefmt.RemoteOpener) error {
	t, err := tapefmt.OpenWith(path, remote)
	if err != nil {
		return err
	}
	defer t.Close()
	rep, err := t.Verify(tapefmt.VerifyOptions{Blobs: true})
	if err == nil && rep.Recovery != nil {
		err = fmt.Errorf("%w: the tape is torn (its recording was cut)", tapefmt.ErrNoFooter)
	}
	return err
}

// sendTape converts one tape and queues its spans on b; its metrics go
// out before it returns.
func sendTape(ctx context.Context, path string, ep Endpoint, o Options, b *batcher) (SentTape, error) {
	t, err := tapefmt.OpenWith(path, o.Remote)
	if err != nil {
		return SentTape{}, err
	}
	defer t.Close()
	start, err := firstRunStart(t)
	if err != nil {
		return SentTape{}, fmt.Errorf("%s: %w", path, err)
	}
	me, err := ep.metricExporter(ctx)
	if err != nil {
		return SentTape{}, fmt.Errorf("otlp: %w", err)
	}
	o.Path = path
	id := t.ID()
	s, err := newSink(trace.TraceID(id), serviceOf(o, start), start, b, me, time.Hour)
	if err != nil {
		return SentTape{}, err
	}
	st := SentTape{Path: path, TraceID: trace.TraceID(id).String()}
	conv := newConverter(o, id, t.Created(), tapeBlobs(t), func(sp *span) { st.Spans++; s.span(sp) }, s.measure)
	for f, err := range t.All() {
		if err != nil {
			return st, fmt.Errorf("%s: %w", path, err)
		}
		if err := conv.frame(f); err != nil {
			return st, fmt.Errorf("%s: %w", path, err)
		}
	}
	conv.finish(conv.last) // a tape cut short has no run.end
	if err := s.closeMetrics(ctx); err != nil {
		return st, fmt.Errorf("otlp: metrics of %s: %w", path, err)
	}
	st.MetricsNotTaken = metricsNotTaken(me)
	return st, nil
}

// metricsNotTaken is an endpoint's answer that it takes no metrics, as
// the metric exporter me heard it (HTTP 404, 405 or 501 at /v1/metrics,
// gRPC UNIMPLEMENTED: Jaeger takes traces alone), "" when it took them.
// The export is not failed for it: the traces went.
func metricsNotTaken(me sdkmetric.Exporter) string {
	if nt, ok := me.(interface{ NotTaken() error }); ok {
		if err := nt.NotTaken(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// tapeBlobs reads blobs from a tape, nil for one it does not have.
func tapeBlobs(t *tapefmt.Tape) func(tapefmt.Hash) []byte {
	return func(h tapefmt.Hash) []byte {
		if h.IsZero() {
			return nil
		}
		b, err := t.Blob(h)
		if err != nil {
			return nil
		}
		return b
	}
}

// firstRunStart is the tape's run.start, which every tape opens with.
func firstRunStart(t *tapefmt.Tape) (*tapefmt.RunStart, error) {
	if t.Len() == 0 {
		return nil, errors.New("the tape has no frames")
	}
	f, err := t.Frame(0)
	if err != nil {
		return nil, err
	}
	p, err := f.Decode()
	if err != nil {
		return nil, fmt.Errorf("frame 0: %w", err)
	}
	rs, ok := p.(*tapefmt.RunStart)
	if !ok {
		return nil, fmt.Errorf("frame 0 is %s, not run.start", f.Kind)
	}
	return rs, nil
}

// serviceOf names the service of a run's spans: as asked, else the
// run's agent.
func serviceOf(o Options, rs *tapefmt.RunStart) string {
	return cmp.Or(o.Service, agentName(rs))
}
