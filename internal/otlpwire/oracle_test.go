package otlpwire

// The OTLP encoding the package had before it wrote the wire format itself:
// the generated OTLP messages and the protobuf runtime, kept here as the
// oracle TestEncodingMatchesProtobuf holds encode.go to.

import (
	"bytes"
	"math"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The requests are ExportTraceServiceRequest and
// ExportMetricsServiceRequest: one repeated field (1) of ResourceSpans or
// ResourceMetrics. They are written here, field by field, because the
// generated collector packages link gRPC.

// TraceRequest encodes spans as an ExportTraceServiceRequest, grouped by
// resource and instrumentation scope in the order they first appear.
func pbTraceRequest(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	var out []*tracepb.ResourceSpans
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	byRes := map[*resource.Resource]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := byRes[res]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: pbResource(res), SchemaUrl: res.SchemaURL()}
			byRes[res] = rs
			out = append(out, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss, ok := byScope[k]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: pbScope(k.scope), SchemaUrl: k.scope.SchemaURL}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, pbSpan(s))
	}
	var b []byte
	for _, rs := range out {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, err
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}

// MetricsRequest encodes one ResourceMetrics as an
// ExportMetricsServiceRequest.
func pbMetricsRequest(rm *metricdata.ResourceMetrics) ([]byte, error) {
	m, err := proto.Marshal(pbResourceMetrics(rm))
	if err != nil {
		return nil, err
	}
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, m), nil
}

// Resource is a resource's OTLP form.
func pbResource(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: pbAttributes(r.Attributes())}
}

func pbScope(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: pbAttributes(s.Attributes.ToSlice())}
}

// Attributes are key-values' OTLP form.
func pbAttributes(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: pbValue(kv.Value)})
	}
	return out
}

func pbValue(v attribute.Value) *commonpb.AnyValue {
	a := &commonpb.AnyValue{}
	switch v.Type() {
	case attribute.BOOL:
		a.Value = &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}
	case attribute.INT64:
		a.Value = &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}
	case attribute.FLOAT64:
		a.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}
	case attribute.STRING:
		a.Value = &commonpb.AnyValue_StringValue{StringValue: v.AsString()}
	case attribute.BOOLSLICE:
		a.Value = pbArray(v.AsBoolSlice(), func(x bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
		})
	case attribute.INT64SLICE:
		a.Value = pbArray(v.AsInt64Slice(), func(x int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
		})
	case attribute.FLOAT64SLICE:
		a.Value = pbArray(v.AsFloat64Slice(), func(x float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		})
	case attribute.STRINGSLICE:
		a.Value = pbArray(v.AsStringSlice(), func(x string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
		})
	default:
		a.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return a
}

func pbArray[T any](xs []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	vs := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vs[i] = one(x)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}
}

// Span is a span's OTLP form.
func pbSpan(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   tracepb.Span_SpanKind(s.SpanKind()), // the same numbers
		StartTimeUnixNano:      nanos(s.StartTime().UnixNano()),
		EndTimeUnixNano:        nanos(s.EndTime().UnixNano()),
		Attributes:             pbAttributes(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 pbStatus(s.Status()),
		Flags:                  uint32(sc.TraceFlags()) | flagHasIsRemote,
	}
	if par := s.Parent(); par.SpanID().IsValid() {
		psid := par.SpanID()
		p.ParentSpanId = psid[:]
		p.Flags = flags(par)&^0xff | uint32(sc.TraceFlags())
	}
	if s.SpanKind() == trace.SpanKindUnspecified {
		p.Kind = tracepb.Span_SPAN_KIND_INTERNAL
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{
			TimeUnixNano:           nanos(e.Time.UnixNano()),
			Name:                   e.Name,
			Attributes:             pbAttributes(e.Attributes),
			DroppedAttributesCount: uint32(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             pbAttributes(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags:                  flags(l.SpanContext),
		})
	}
	return p
}

func pbStatus(s sdktrace.Status) *tracepb.Status {
	st := &tracepb.Status{}
	switch s.Code {
	case codes.Ok:
		st.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		st.Code, st.Message = tracepb.Status_STATUS_CODE_ERROR, s.Description
	}
	return st
}

// ResourceMetrics is a collection's OTLP form.
func pbResourceMetrics(rm *metricdata.ResourceMetrics) *metricspb.ResourceMetrics {
	out := &metricspb.ResourceMetrics{Resource: pbResource(rm.Resource), SchemaUrl: rm.Resource.SchemaURL()}
	for _, sm := range rm.ScopeMetrics {
		ps := &metricspb.ScopeMetrics{Scope: pbScope(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			if pm := pbMetricOf(m); pm != nil {
				ps.Metrics = append(ps.Metrics, pm)
			}
		}
		out.ScopeMetrics = append(out.ScopeMetrics, ps)
	}
	return out
}

func pbTemporality(t metricdata.Temporality) metricspb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

// metricOf is a metric's OTLP form; nil for an aggregation OTLP lacks.
func pbMetricOf(m metricdata.Metrics) *metricspb.Metric {
	p := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pbNumbers(a.DataPoints)}}
	case metricdata.Gauge[float64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: pbNumbers(a.DataPoints)}}
	case metricdata.Sum[int64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: pbNumbers(a.DataPoints),
			AggregationTemporality: pbTemporality(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Sum[float64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: pbNumbers(a.DataPoints),
			AggregationTemporality: pbTemporality(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Histogram[int64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: pbHistogram(a.DataPoints),
			AggregationTemporality: pbTemporality(a.Temporality)}}
	case metricdata.Histogram[float64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: pbHistogram(a.DataPoints),
			AggregationTemporality: pbTemporality(a.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: pbExpHistogram(a.DataPoints), AggregationTemporality: pbTemporality(a.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: pbExpHistogram(a.DataPoints), AggregationTemporality: pbTemporality(a.Temporality)}}
	case metricdata.Summary:
		p.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: pbSummary(a.DataPoints)}}
	default:
		return nil
	}
	return p
}

func pbNumbers[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricspb.NumberDataPoint {
	out := make([]*metricspb.NumberDataPoint, 0, len(dps))
	for _, d := range dps {
		p := &metricspb.NumberDataPoint{
			Attributes:        pbAttributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Exemplars:         pbExemplars(d.Exemplars),
		}
		switch v := any(d.Value).(type) {
		case int64:
			p.Value = &metricspb.NumberDataPoint_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.NumberDataPoint_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

func pbHistogram[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricspb.HistogramDataPoint {
	out := make([]*metricspb.HistogramDataPoint, 0, len(dps))
	for _, d := range dps {
		sum := float64(d.Sum)
		p := &metricspb.HistogramDataPoint{
			Attributes:        pbAttributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Count:             d.Count,
			Sum:               &sum,
			BucketCounts:      d.BucketCounts,
			ExplicitBounds:    d.Bounds,
			Exemplars:         pbExemplars(d.Exemplars),
		}
		p.Min, p.Max = pbExtremum(d.Min), pbExtremum(d.Max)
		out = append(out, p)
	}
	return out
}

func pbExpHistogram[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricspb.ExponentialHistogramDataPoint {
	out := make([]*metricspb.ExponentialHistogramDataPoint, 0, len(dps))
	for _, d := range dps {
		sum := float64(d.Sum)
		p := &metricspb.ExponentialHistogramDataPoint{
			Attributes:        pbAttributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Count:             d.Count,
			Sum:               &sum,
			Scale:             d.Scale,
			ZeroCount:         d.ZeroCount,
			ZeroThreshold:     d.ZeroThreshold,
			Positive:          &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: d.PositiveBucket.Offset, BucketCounts: d.PositiveBucket.Counts},
			Negative:          &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: d.NegativeBucket.Offset, BucketCounts: d.NegativeBucket.Counts},
			Exemplars:         pbExemplars(d.Exemplars),
		}
		p.Min, p.Max = pbExtremum(d.Min), pbExtremum(d.Max)
		out = append(out, p)
	}
	return out
}

// extremum is a histogram's minimum or maximum, nil when unset.
func pbExtremum[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func pbSummary(dps []metricdata.SummaryDataPoint) []*metricspb.SummaryDataPoint {
	out := make([]*metricspb.SummaryDataPoint, 0, len(dps))
	for _, d := range dps {
		p := &metricspb.SummaryDataPoint{
			Attributes:        pbAttributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Count:             d.Count,
			Sum:               d.Sum,
		}
		for _, q := range d.QuantileValues {
			p.QuantileValues = append(p.QuantileValues, &metricspb.SummaryDataPoint_ValueAtQuantile{Quantile: q.Quantile, Value: q.Value})
		}
		out = append(out, p)
	}
	return out
}

func pbExemplars[N int64 | float64](es []metricdata.Exemplar[N]) []*metricspb.Exemplar {
	var out []*metricspb.Exemplar
	for _, e := range es {
		p := &metricspb.Exemplar{
			FilteredAttributes: pbAttributes(e.FilteredAttributes),
			TimeUnixNano:       nanos(e.Time.UnixNano()),
			SpanId:             e.SpanID,
			TraceId:            e.TraceID,
		}
		switch v := any(e.Value).(type) {
		case int64:
			p.Value = &metricspb.Exemplar_AsInt{AsInt: v}
		case float64:
			p.Value = &metricspb.Exemplar_AsDouble{AsDouble: v}
		}
		out = append(out, p)
	}
	return out
}

// TestEncodingMatchesProtobuf: encode.go writes the bytes the protobuf
// runtime writes for the same spans and metrics, every field kind
// included (zero values, negative numbers, -0, unset and set extrema,
// oneofs at their zero value, empty messages, a nil resource).
func TestEncodingMatchesProtobuf(t *testing.T) {
	in := spans(t)
	got, err := TraceRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pbTraceRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("spans: %d bytes, the protobuf runtime's %d:\n got %x\nwant %x", len(got), len(want), got, want)
	}
	for name, rm := range oracleMetrics() {
		got, err := MetricsRequest(rm)
		if err != nil {
			t.Fatal(err)
		}
		want, err := pbMetricsRequest(rm)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, the protobuf runtime's %d:\n got %x\nwant %x", name, len(got), len(want), got, want)
		}
	}
}

func oracleMetrics() map[string]*metricdata.ResourceMetrics {
	t0, t1 := time.Unix(1_700_000_000, 5), time.Unix(1_700_000_060, 0)
	attrs := attribute.NewSet(attribute.String("k", "v"), attribute.Int64("n", 0), attribute.Bool("f", false),
		attribute.Float64("z", 0), attribute.String("e", ""), attribute.Float64Slice("fs", []float64{math.Copysign(0, -1), 1}))
	ex64 := []metricdata.Exemplar[int64]{{FilteredAttributes: []attribute.KeyValue{attribute.String("x", "y")}, Time: t1,
		Value: -3, SpanID: []byte{1, 2, 3, 4, 5, 6, 7, 8}, TraceID: make([]byte, 16)}, {Value: 0}}
	exF := []metricdata.Exemplar[float64]{{Time: t1, Value: math.Copysign(0, -1)}, {Value: 2.5, SpanID: []byte{9}}}
	sm := metricdata.ScopeMetrics{
		Scope: instrumentation.Scope{Name: "m", Version: "1", SchemaURL: "https://x/s", Attributes: attribute.NewSet(attribute.Int("a", 1))},
		Metrics: []metricdata.Metrics{
			{Name: "gi", Description: "d", Unit: "1", Data: metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{
				{Attributes: attrs, StartTime: t0, Time: t1, Value: 0, Exemplars: ex64}, {Value: -9}}}},
			{Name: "gf", Data: metricdata.Gauge[float64]{DataPoints: []metricdata.DataPoint[float64]{{Value: 0, Exemplars: exF}, {Value: -1e300}}}},
			{Name: "gempty", Data: metricdata.Gauge[int64]{}},
			{Name: "si", Data: metricdata.Sum[int64]{Temporality: metricdata.DeltaTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Time: t1, Value: 1 << 40}}}},
			{Name: "sf", Data: metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.DataPoint[float64]{{Value: 0.1}}}},
			{Name: "su", Data: metricdata.Sum[float64]{}},
			{Name: "hi", Data: metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[int64]{{Attributes: attrs, StartTime: t0, Time: t1, Count: 3,
					Bounds: []float64{0, 10, 100}, BucketCounts: []uint64{0, 1, 2, 0}, Min: metricdata.NewExtrema[int64](-4),
					Max: metricdata.NewExtrema[int64](0), Sum: 0, Exemplars: ex64}, {}}}},
			{Name: "hf", Data: metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{{Count: 1, Sum: 2.5, Bounds: []float64{1}, BucketCounts: []uint64{0, 1},
					Max: metricdata.NewExtrema(2.5)}}}},
			{Name: "ei", Data: metricdata.ExponentialHistogram[int64]{Temporality: metricdata.DeltaTemporality,
				DataPoints: []metricdata.ExponentialHistogramDataPoint[int64]{{Attributes: attrs, StartTime: t0, Time: t1, Count: 5, Sum: 20,
					Scale: -3, ZeroCount: 1, ZeroThreshold: 1e-9, PositiveBucket: metricdata.ExponentialBucket{Offset: -2, Counts: []uint64{1, 0, 300}},
					NegativeBucket: metricdata.ExponentialBucket{}, Min: metricdata.NewExtrema[int64](0), Exemplars: ex64}}}},
			{Name: "ef", Data: metricdata.ExponentialHistogram[float64]{
				DataPoints: []metricdata.ExponentialHistogramDataPoint[float64]{{Scale: 20, NegativeBucket: metricdata.ExponentialBucket{Offset: 7, Counts: []uint64{2}},
					Max: metricdata.NewExtrema(-0.5), Exemplars: exF}}}},
			{Name: "sum", Data: metricdata.Summary{DataPoints: []metricdata.SummaryDataPoint{{Attributes: attrs, StartTime: t0, Time: t1,
				Count: 4, Sum: 10, QuantileValues: []metricdata.QuantileValue{{Quantile: 0, Value: 1}, {Quantile: 1, Value: 0}}}, {}}}},
			{Name: "unknown", Data: nil},
		},
	}
	return map[string]*metricdata.ResourceMetrics{
		"every aggregation": {Resource: resource.NewWithAttributes("https://x/r", attribute.String("service.name", "svc")),
			ScopeMetrics: []metricdata.ScopeMetrics{sm, {}}},
		"no resource": {ScopeMetrics: []metricdata.ScopeMetrics{sm}},
		"nothing":     {Resource: resource.Empty()},
	}
}
