package otlpwire

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

var errShutdown = errors.New("otlpwire: the exporter is shut down")

// gate lets exports through until shutdown.
type gate struct {
	mu   sync.RWMutex
	shut bool
}

// send sends body through s unless the gate is shut.
func (g *gate) send(ctx context.Context, s *sender, encode func() ([]byte, error)) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.shut {
		return errShutdown
	}
	b, err := encode()
	if err != nil {
		return err
	}
	return s.send(ctx, b)
}

// shutdown shuts the gate and lets s's connections go.
func (g *gate) shutdown(s *sender) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.shut {
		g.shut = true
		s.close()
	}
	return nil
}

// TraceExporter sends spans: an sdktrace.SpanExporter.
type TraceExporter struct {
	s *sender
	g gate
}

// NewTraceExporter makes the span exporter of cfg.
func NewTraceExporter(cfg Config) (*TraceExporter, error) {
	s, err := newSender(cfg, traces)
	if err != nil {
		return nil, err
	}
	return &TraceExporter{s: s}, nil
}

// ExportSpans sends spans in one request.
func (e *TraceExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	return e.g.send(ctx, e.s, func() ([]byte, error) { return TraceRequest(spans) })
}

// Shutdown ends the exporter.
func (e *TraceExporter) Shutdown(context.Context) error {
	return e.g.shutdown(e.s)
}

// MetricExporter sends metrics: an sdkmetric.Exporter.
type MetricExporter struct {
	s           *sender
	temporality sdkmetric.TemporalitySelector
	g           gate
	notTaken    atomic.Pointer[error] // NotTaken
}

// NewMetricExporter makes the metric exporter of cfg; its temporality
// follows OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE (cumulative,
// delta or lowmemory).
func NewMetricExporter(cfg Config) (*MetricExporter, error) {
	s, err := newSender(cfg, metrics)
	if err != nil {
		return nil, err
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return &MetricExporter{s: s, temporality: temporalityFrom(getenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"))}, nil
}

func temporalityFrom(pref string) sdkmetric.TemporalitySelector {
	delta := func(k sdkmetric.InstrumentKind, lowMemory bool) metricdata.Temporality {
		switch k {
		case sdkmetric.InstrumentKindCounter, sdkmetric.InstrumentKindHistogram:
			return metricdata.DeltaTemporality
		case sdkmetric.InstrumentKindObservableCounter:
			if !lowMemory {
				return metricdata.DeltaTemporality
			}
		}
		return metricdata.CumulativeTemporality
	}
	switch strings.ToLower(strings.TrimSpace(pref)) {
	case "delta":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality { return delta(k, false) }
	case "lowmemory":
		return func(k sdkmetric.InstrumentKind) metricdata.Temporality { return delta(k, true) }
	}
	return sdkmetric.DefaultTemporalitySelector
}

// Temporality is the temporality of an instrument kind's data.
func (e *MetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return e.temporality(k)
}

// Aggregation is the SDK's default for the kind.
func (e *MetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

// Export sends one collection. Once the receiver has said it takes no
// metrics (NotTaken), it sends none and reports no error: a receiver of
// traces alone is not a failing one.
func (e *MetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if e.notTaken.Load() != nil {
		return nil
	}
	err := e.g.send(ctx, e.s, func() ([]byte, error) { return MetricsRequest(rm) })
	var nt *notTaken
	if errors.As(err, &nt) {
		e.notTaken.CompareAndSwap(nil, &err)
		return nil
	}
	return err
}

// NotTaken is the receiver's answer that it takes no metrics (HTTP 404,
// 405 or 501 at /v1/metrics, gRPC UNIMPLEMENTED: Jaeger takes traces
// alone), after which the exporter sent none; nil when it took them, or
// was sent none.
func (e *MetricExporter) NotTaken() error {
	if p := e.notTaken.Load(); p != nil {
		return *p
	}
	return nil
}

// ForceFlush has nothing to flush: Export sends at once.
func (e *MetricExporter) ForceFlush(context.Context) error { return nil }

// Shutdown ends the exporter.
func (e *MetricExporter) Shutdown(context.Context) error {
	return e.g.shutdown(e.s)
}

var (
	_ sdktrace.SpanExporter = (*TraceExporter)(nil)
	_ sdkmetric.Exporter    = (*MetricExporter)(nil)
)
