package export

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/internal/otlpwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Protocols of OTLP, as OTEL_EXPORTER_OTLP_PROTOCOL names them.
const (
	ProtocolHTTP = "http/protobuf" // the default
	ProtocolGRPC = "grpc"
)

// Endpoint is where an export goes: an OTLP receiver (an OpenTelemetry
// Collector, Jaeger, Tempo, Langfuse, Phoenix).
type Endpoint struct {
	// URL is the receiver's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
	// gives it: over HTTP, /v1/traces and /v1/metrics are appended; over
	// gRPC it names the host and port (http:// for no TLS). "" leaves it
	// to the standard OTEL_EXPORTER_OTLP_* variables, which
	// internal/otlpwire reads as the OpenTelemetry exporters do (endpoints
	// per signal, headers, timeout, certificates, compression, insecure).
	URL string
	// Protocol is ProtocolHTTP or ProtocolGRPC; "" is
	// OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL), else HTTP.
	Protocol string
	// Headers are sent with every export, over what the variables say.
	Headers map[string]string
	// Timeout bounds each export request; 0 is the exporters' default
	// (10 s).
	Timeout time.Duration
	// NoRetry sends each batch once: a live export never waits for a
	// receiver that is down.
	NoRetry bool
	// OnRetry, when set, is told of each refusal tried again (the
	// receiver is down: up to a minute of retries), from the exporters'
	// goroutines.
	OnRetry func(err error, wait time.Duration)
}

// Configured reports whether an endpoint is given, by URL or by the
// standard variables (getenv is os.Getenv).
func Configured(url string, getenv func(string) string) bool {
	return url != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// ProtocolFrom is the protocol asked for: p, else the standard variables,
// else HTTP. An unknown name is an error that says which are known.
func ProtocolFrom(p string, getenv func(string) string) (string, error) {
	for _, v := range []string{p, getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")} {
		switch v {
		case "":
			continue
		case "http", ProtocolHTTP:
			return ProtocolHTTP, nil
		case ProtocolGRPC:
			return ProtocolGRPC, nil
		case "http/json":
			return "", fmt.Errorf("protocol %q: jukebox speaks %s and %s", v, ProtocolHTTP, ProtocolGRPC)
		default:
			return "", fmt.Errorf("protocol %q: want %s (or http) or %s", v, ProtocolHTTP, ProtocolGRPC)
		}
	}
	return ProtocolHTTP, nil
}

// CheckURL says what is wrong with an endpoint URL, or nil: it must be
// absolute, http or https, with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: want http://HOST:PORT", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q is not an http:// or https:// URL", raw)
	case u.Host == "":
		return fmt.Errorf("%q names no host", raw)
	}
	return nil
}

// ParseHeaders reads "k=v,k=v" as OTEL_EXPORTER_OTLP_HEADERS writes
// headers (values URL-encoded).
func ParseHeaders(s string) (map[string]string, error) { return otlpwire.ParseHeaders(s) }

// wire is the configuration of an endpoint's exporters: what e leaves
// out, the standard OTEL_EXPORTER_OTLP_* variables give. A receiver's
// partial success goes to the OpenTelemetry error handler (logged), as
// the OpenTelemetry exporters report it.
func (e Endpoint) wire() otlpwire.Config {
	return otlpwire.Config{URL: e.URL, Protocol: e.Protocol, Headers: e.Headers, Timeout: e.Timeout,
		NoRetry: e.NoRetry, OnRetry: e.OnRetry, OnPartial: otel.Handle}
}

// traceExporter makes the span exporter of an endpoint.
func (e Endpoint) traceExporter(context.Context) (sdktrace.SpanExporter, error) {
	return otlpwire.NewTraceExporter(e.wire())
}

// metricExporter makes the metric exporter of an endpoint.
func (e Endpoint) metricExporter(context.Context) (sdkmetric.Exporter, error) {
	return otlpwire.NewMetricExporter(e.wire())
}

// batcher is the span processor of every export: it queues finished spans
// and sends them in batches. Live (drop), a full queue drops a span and
// counts it, and a batch the receiver refuses is counted as dropped too:
// the recording never waits. Otherwise a full queue waits for room, and
// the exporter retries a refused batch as its configuration says.
type batcher struct {
	exp       sdktrace.SpanExporter
	queue     chan sdktrace.ReadOnlySpan
	drop      bool
	dropped   atomic.Int64
	exported  atomic.Int64
	failed    atomic.Int64
	mu        sync.Mutex
	err       error // the first failed export
	inflight  int   // spans in the batch being sent
	abandoned bool  // close gave up waiting: the counts are final
	closing   sync.Once
	sending   sync.RWMutex // held to send on queue; closing takes it whole
	shut      bool         // the queue is closed
	done      chan struct{}
}

const (
	batchSize     = 512
	batchInterval = 200 * time.Millisecond
	// batchBytes bounds a batch's attributes: a collector's gRPC receiver
	// refuses a message over 4 MiB (its default), and a batch with one
	// large tool result in it was refused whole, every span of the run
	// with it. A span past it goes in a batch of its own.
	batchBytes = 3 << 20
	// attrValueLimit cuts an attribute's value (OpenTelemetry's attribute
	// value length limit) unless OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT or
	// OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT says otherwise: content of a few
	// megabytes (a tool's whole output) made a span no receiver took.
	attrValueLimit = 1 << 20
)

// valueLimit is the attribute value length limit: the environment's, as
// OpenTelemetry SDKs read it, else attrValueLimit.
func valueLimit() int {
	for _, name := range []string{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"} {
		if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv(name))); err == nil && n > 0 {
			return n
		}
	}
	return attrValueLimit
}

// spanBytes is about what a span's attributes and events weigh on the wire.
func spanBytes(s sdktrace.ReadOnlySpan) int {
	n := len(s.Name()) + 64
	add := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			n += len(kv.Key) + 8
			if kv.Value.Type() == attribute.STRING {
				n += len(kv.Value.AsString())
			}
		}
	}
	add(s.Attributes())
	for _, e := range s.Events() {
		n += len(e.Name)
		add(e.Attributes)
	}
	return n
}

func newBatcher(exp sdktrace.SpanExporter, queue int, drop bool) *batcher {
	b := &batcher{exp: exp, queue: make(chan sdktrace.ReadOnlySpan, queue), drop: drop, done: make(chan struct{})}
	go b.loop()
	return b
}

func (b *batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (b *batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !b.drop {
		b.queue <- s // offline: one goroutine makes the spans, then closes
		return
	}
	// Live: a span ended after close (a converter still busy past the
	// grace) is counted, never sent on the closed queue.
	b.sending.RLock()
	defer b.sending.RUnlock()
	if b.shut {
		b.dropped.Add(1)
		return
	}
	select {
	case b.queue <- s:
	default:
		b.dropped.Add(1)
	}
}

// Shutdown and ForceFlush do nothing: the providers of several tapes share
// one batcher, which close ends.
func (b *batcher) Shutdown(context.Context) error   { return nil }
func (b *batcher) ForceFlush(context.Context) error { return nil }

func (b *batcher) loop() {
	defer close(b.done)
	batch := make([]sdktrace.ReadOnlySpan, 0, batchSize)
	size := 0
	tick := time.NewTicker(batchInterval)
	defer tick.Stop()
	for {
		select {
		case s, ok := <-b.queue:
			if !ok {
				b.send(batch)
				return
			}
			n := spanBytes(s)
			if len(batch) > 0 && size+n > batchBytes {
				b.send(batch)
				batch, size = batch[:0], 0
			}
			batch, size = append(batch, s), size+n
			if len(batch) < batchSize && size < batchBytes {
				continue
			}
		case <-tick.C:
		}
		b.send(batch)
		batch, size = batch[:0], 0
	}
}

func (b *batcher) send(batch []sdktrace.ReadOnlySpan) {
	if len(batch) == 0 {
		return
	}
	b.mu.Lock()
	b.inflight = len(batch)
	b.mu.Unlock()
	err := b.exp.ExportSpans(context.Background(), batch)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight = 0
	switch {
	case b.abandoned: // counted as dropped by close
	case err != nil:
		b.failed.Add(int64(len(batch)))
		if b.err == nil {
			b.err = err
		}
	default:
		b.exported.Add(int64(len(batch)))
	}
}

// close sends what is queued, waiting until ctx ends at most; spans not
// sent by then count as dropped. It shuts the exporter down.
func (b *batcher) close(ctx context.Context) {
	b.closing.Do(func() {
		b.sending.Lock()
		b.shut = true
		close(b.queue)
		b.sending.Unlock()
	})
	select {
	case <-b.done:
	case <-ctx.Done():
		b.mu.Lock()
		b.abandoned = true
		b.dropped.Add(int64(len(b.queue) + b.inflight))
		if b.err == nil {
			b.err = fmt.Errorf("the receiver had not taken the last spans when the wait ended: %w", ctx.Err())
		}
		b.mu.Unlock()
	}
	b.exp.Shutdown(ctx)
}

// firstErr is the first export that failed, or nil.
func (b *batcher) firstErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// ids gives the SDK the span ids the converter chose (frame numbers), so
// that every export of a tape has the same ids; the trace id is the tape's.
type ids struct{}

type idKey struct{}

type wantIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	w, _ := ctx.Value(idKey{}).(wantIDs)
	return w.trace, w.span
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	w, _ := ctx.Value(idKey{}).(wantIDs)
	return w.span
}

// sink turns the converter's spans and measures into the SDK's, for one
// tape: a tracer and meter whose resource names the run's service.
type sink struct {
	traceID trace.TraceID
	tracer  trace.Tracer
	mp      *sdkmetric.MeterProvider // nil: no metrics
	tokens  metric.Int64Histogram
	dur     metric.Float64Histogram
	chunk   metric.Float64Histogram
}

// newSink makes the tracer of one tape, its spans going to b, and its
// meter, whose measures go to me (none when me is nil). The resource is
// the run's: its service, the tape id as service.instance.id (each run a
// series of its own, so the cumulative metrics of any number of runs and
// hosts add up in a backend), its host, user, commit and tags.
func newSink(traceID trace.TraceID, service string, rs *tapefmt.RunStart, b *batcher, me sdkmetric.Exporter, every time.Duration) (*sink, error) {
	attrs := append([]attribute.KeyValue{attrServiceName.String(service), attrServiceInstance.String(traceID.String())}, runAttrs(rs)...)
	res := resource.NewWithAttributes(schemaURL, attrs...)
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(b),
		sdktrace.WithIDGenerator(ids{}), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeValueLengthLimit: valueLimit(), AttributeCountLimit: 128,
			EventCountLimit: 1024, LinkCountLimit: 0, AttributePerEventCountLimit: 16, AttributePerLinkCountLimit: 0}))
	s := &sink{traceID: traceID, tracer: tp.Tracer("github.com/jukebox-os/jukebox/export", trace.WithSchemaURL(schemaURL))}
	if me == nil {
		return s, nil
	}
	s.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(me, sdkmetric.WithInterval(every))))
	m := s.mp.Meter("github.com/jukebox-os/jukebox/export", metric.WithSchemaURL(schemaURL))
	var err error
	s.tokens, err = m.Int64Histogram(metricTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."), metric.WithExplicitBucketBoundaries(tokenBuckets...))
	if err != nil {
		return nil, err
	}
	s.dur, err = m.Float64Histogram(metricDuration, metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."), metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err != nil {
		return nil, err
	}
	s.chunk, err = m.Float64Histogram(metricFirstChunk, metric.WithUnit("s"),
		metric.WithDescription("Time to receive the first chunk of a streamed response."), metric.WithExplicitBucketBoundaries(chunkBuckets...))
	return s, err
}

func (s *sink) span(sp *span) {
	ctx := context.WithValue(context.Background(), idKey{}, wantIDs{trace: s.traceID, span: sp.id})
	if sp.parent.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: s.traceID, SpanID: sp.parent, TraceFlags: trace.FlagsSampled}))
	}
	_, t := s.tracer.Start(ctx, sp.name, trace.WithTimestamp(sp.start), trace.WithSpanKind(sp.kind), trace.WithAttributes(sp.attrs...))
	for _, e := range sp.events {
		t.AddEvent(e.name, trace.WithTimestamp(e.at), trace.WithAttributes(e.attrs...))
	}
	if sp.err != "" {
		t.SetStatus(codes.Error, sp.err)
	}
	t.End(trace.WithTimestamp(sp.end))
}

// closeMetrics sends the measures and shuts the meter down.
func (s *sink) closeMetrics(ctx context.Context) error {
	if s.mp == nil {
		return nil
	}
	return s.mp.Shutdown(ctx)
}

func (s *sink) measure(m measure) {
	if s.tokens == nil {
		return
	}
	attrs := []attribute.KeyValue{attrOperation.String(m.op), attrProvider.String(otelProvider(m.provider))}
	if m.requestModel != "" {
		attrs = append(attrs, attrRequestModel.String(m.requestModel))
	}
	if m.responseModel != "" {
		attrs = append(attrs, attrResponseModel.String(m.responseModel))
	}
	ctx := context.Background()
	if m.usage {
		s.tokens.Record(ctx, m.input, metric.WithAttributes(append(attrs, attrTokenType.String(tokenTypeInput))...))
		s.tokens.Record(ctx, m.output, metric.WithAttributes(append(attrs, attrTokenType.String(tokenTypeOutput))...))
	}
	if m.errType != "" {
		attrs = append(attrs, attrErrorType.String(m.errType))
	}
	s.dur.Record(ctx, m.seconds, metric.WithAttributes(attrs...))
	if m.streamed {
		s.chunk.Record(ctx, m.firstChunk, metric.WithAttributes(attrs...))
	}
}

// runAttrs are the run's metadata as resource attributes: its host, the
// user who ran it, the commit and branch of its folder (the conventions'
// vcs.*), and its tags (jukebox.tag.KEY).
func runAttrs(rs *tapefmt.RunStart) []attribute.KeyValue {
	var out []attribute.KeyValue
	if rs.Host != "" {
		out = append(out, attrHostName.String(rs.Host))
	}
	if rs.User != "" {
		out = append(out, attrUserName.String(rs.User))
	}
	if rs.Git != nil {
		if rs.Git.Commit != "" {
			out = append(out, attrVCSRevision.String(rs.Git.Commit))
		}
		if rs.Git.Branch != "" {
			out = append(out, attrVCSRef.String(rs.Git.Branch))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rs.Tags)) {
		out = append(out, attribute.String("jukebox.tag."+k, rs.Tags[k]))
	}
	return out
}
