package otlpwire

import (
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
func TraceRequest(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
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
			rs = &tracepb.ResourceSpans{Resource: Resource(res), SchemaUrl: res.SchemaURL()}
			byRes[res] = rs
			out = append(out, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss, ok := byScope[k]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: scope(k.scope), SchemaUrl: k.scope.SchemaURL}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, Span(s))
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
func MetricsRequest(rm *metricdata.ResourceMetrics) ([]byte, error) {
	m, err := proto.Marshal(ResourceMetrics(rm))
	if err != nil {
		return nil, err
	}
	b := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(b, m), nil
}

// partial is an export's answer: ExportTracePartialSuccess or
// ExportMetricsPartialSuccess (rejected count 1, error message 2) in
// field 1 of the response.
type partial struct {
	rejected int64
	message  string
}

// decodePartial reads the partial success of an export's answer; a body
// it cannot read is no partial success.
func decodePartial(b []byte) (partial, bool) {
	var p partial
	found := false
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return p, false
		}
		b = b[n:]
		if num == 1 && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return p, false
			}
			found = true
			for v := v; len(v) > 0; {
				fn, ft, k := protowire.ConsumeTag(v)
				if k < 0 {
					return p, false
				}
				v = v[k:]
				switch {
				case fn == 1 && ft == protowire.VarintType:
					x, k := protowire.ConsumeVarint(v)
					if k < 0 {
						return p, false
					}
					p.rejected, v = int64(x), v[k:]
				case fn == 2 && ft == protowire.BytesType:
					s, k := protowire.ConsumeBytes(v)
					if k < 0 {
						return p, false
					}
					p.message, v = string(s), v[k:]
				default:
					k := protowire.ConsumeFieldValue(fn, ft, v)
					if k < 0 {
						return p, false
					}
					v = v[k:]
				}
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return p, false
		}
		b = b[n:]
	}
	return p, found && (p.rejected != 0 || p.message != "")
}

// Resource is a resource's OTLP form.
func Resource(r *resource.Resource) *resourcepb.Resource {
	if r == nil {
		return &resourcepb.Resource{}
	}
	return &resourcepb.Resource{Attributes: Attributes(r.Attributes())}
}

func scope(s instrumentation.Scope) *commonpb.InstrumentationScope {
	return &commonpb.InstrumentationScope{Name: s.Name, Version: s.Version, Attributes: Attributes(s.Attributes.ToSlice())}
}

// Attributes are key-values' OTLP form.
func Attributes(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) *commonpb.AnyValue {
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
		a.Value = array(v.AsBoolSlice(), func(x bool) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
		})
	case attribute.INT64SLICE:
		a.Value = array(v.AsInt64Slice(), func(x int64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
		})
	case attribute.FLOAT64SLICE:
		a.Value = array(v.AsFloat64Slice(), func(x float64) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
		})
	case attribute.STRINGSLICE:
		a.Value = array(v.AsStringSlice(), func(x string) *commonpb.AnyValue {
			return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
		})
	default:
		a.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
	return a
}

func array[T any](xs []T, one func(T) *commonpb.AnyValue) *commonpb.AnyValue_ArrayValue {
	vs := make([]*commonpb.AnyValue, len(xs))
	for i, x := range xs {
		vs[i] = one(x)
	}
	return &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}
}

// Span flags: the low 8 bits are the W3C trace flags; these say whether
// the parent (or a link's span) is remote.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func flags(sc trace.SpanContext) uint32 {
	f := uint32(sc.TraceFlags()) | flagHasIsRemote
	if sc.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// Span is a span's OTLP form.
func Span(s sdktrace.ReadOnlySpan) *tracepb.Span {
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
		Attributes:             Attributes(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 status(s.Status()),
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
			Attributes:             Attributes(e.Attributes),
			DroppedAttributesCount: uint32(e.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{
			TraceId:                ltid[:],
			SpanId:                 lsid[:],
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             Attributes(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount),
			Flags:                  flags(l.SpanContext),
		})
	}
	return p
}

func nanos(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func status(s sdktrace.Status) *tracepb.Status {
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
func ResourceMetrics(rm *metricdata.ResourceMetrics) *metricspb.ResourceMetrics {
	out := &metricspb.ResourceMetrics{Resource: Resource(rm.Resource), SchemaUrl: rm.Resource.SchemaURL()}
	for _, sm := range rm.ScopeMetrics {
		ps := &metricspb.ScopeMetrics{Scope: scope(sm.Scope), SchemaUrl: sm.Scope.SchemaURL}
		for _, m := range sm.Metrics {
			if pm := metricOf(m); pm != nil {
				ps.Metrics = append(ps.Metrics, pm)
			}
		}
		out.ScopeMetrics = append(out.ScopeMetrics, ps)
	}
	return out
}

func temporality(t metricdata.Temporality) metricspb.AggregationTemporality {
	switch t {
	case metricdata.DeltaTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	case metricdata.CumulativeTemporality:
		return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	}
	return metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_UNSPECIFIED
}

// metricOf is a metric's OTLP form; nil for an aggregation OTLP lacks.
func metricOf(m metricdata.Metrics) *metricspb.Metric {
	p := &metricspb.Metric{Name: m.Name, Description: m.Description, Unit: m.Unit}
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numbers(a.DataPoints)}}
	case metricdata.Gauge[float64]:
		p.Data = &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{DataPoints: numbers(a.DataPoints)}}
	case metricdata.Sum[int64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numbers(a.DataPoints),
			AggregationTemporality: temporality(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Sum[float64]:
		p.Data = &metricspb.Metric_Sum{Sum: &metricspb.Sum{DataPoints: numbers(a.DataPoints),
			AggregationTemporality: temporality(a.Temporality), IsMonotonic: a.IsMonotonic}}
	case metricdata.Histogram[int64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histogram(a.DataPoints),
			AggregationTemporality: temporality(a.Temporality)}}
	case metricdata.Histogram[float64]:
		p.Data = &metricspb.Metric_Histogram{Histogram: &metricspb.Histogram{DataPoints: histogram(a.DataPoints),
			AggregationTemporality: temporality(a.Temporality)}}
	case metricdata.ExponentialHistogram[int64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: expHistogram(a.DataPoints), AggregationTemporality: temporality(a.Temporality)}}
	case metricdata.ExponentialHistogram[float64]:
		p.Data = &metricspb.Metric_ExponentialHistogram{ExponentialHistogram: &metricspb.ExponentialHistogram{
			DataPoints: expHistogram(a.DataPoints), AggregationTemporality: temporality(a.Temporality)}}
	case metricdata.Summary:
		p.Data = &metricspb.Metric_Summary{Summary: &metricspb.Summary{DataPoints: summary(a.DataPoints)}}
	default:
		return nil
	}
	return p
}

func numbers[N int64 | float64](dps []metricdata.DataPoint[N]) []*metricspb.NumberDataPoint {
	out := make([]*metricspb.NumberDataPoint, 0, len(dps))
	for _, d := range dps {
		p := &metricspb.NumberDataPoint{
			Attributes:        Attributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Exemplars:         exemplars(d.Exemplars),
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

func histogram[N int64 | float64](dps []metricdata.HistogramDataPoint[N]) []*metricspb.HistogramDataPoint {
	out := make([]*metricspb.HistogramDataPoint, 0, len(dps))
	for _, d := range dps {
		sum := float64(d.Sum)
		p := &metricspb.HistogramDataPoint{
			Attributes:        Attributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Count:             d.Count,
			Sum:               &sum,
			BucketCounts:      d.BucketCounts,
			ExplicitBounds:    d.Bounds,
			Exemplars:         exemplars(d.Exemplars),
		}
		p.Min, p.Max = extremum(d.Min), extremum(d.Max)
		out = append(out, p)
	}
	return out
}

func expHistogram[N int64 | float64](dps []metricdata.ExponentialHistogramDataPoint[N]) []*metricspb.ExponentialHistogramDataPoint {
	out := make([]*metricspb.ExponentialHistogramDataPoint, 0, len(dps))
	for _, d := range dps {
		sum := float64(d.Sum)
		p := &metricspb.ExponentialHistogramDataPoint{
			Attributes:        Attributes(d.Attributes.ToSlice()),
			StartTimeUnixNano: nanos(d.StartTime.UnixNano()),
			TimeUnixNano:      nanos(d.Time.UnixNano()),
			Count:             d.Count,
			Sum:               &sum,
			Scale:             d.Scale,
			ZeroCount:         d.ZeroCount,
			ZeroThreshold:     d.ZeroThreshold,
			Positive:          &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: d.PositiveBucket.Offset, BucketCounts: d.PositiveBucket.Counts},
			Negative:          &metricspb.ExponentialHistogramDataPoint_Buckets{Offset: d.NegativeBucket.Offset, BucketCounts: d.NegativeBucket.Counts},
			Exemplars:         exemplars(d.Exemplars),
		}
		p.Min, p.Max = extremum(d.Min), extremum(d.Max)
		out = append(out, p)
	}
	return out
}

// extremum is a histogram's minimum or maximum, nil when unset.
func extremum[N int64 | float64](e metricdata.Extrema[N]) *float64 {
	v, ok := e.Value()
	if !ok {
		return nil
	}
	f := float64(v)
	return &f
}

func summary(dps []metricdata.SummaryDataPoint) []*metricspb.SummaryDataPoint {
	out := make([]*metricspb.SummaryDataPoint, 0, len(dps))
	for _, d := range dps {
		p := &metricspb.SummaryDataPoint{
			Attributes:        Attributes(d.Attributes.ToSlice()),
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

func exemplars[N int64 | float64](es []metricdata.Exemplar[N]) []*metricspb.Exemplar {
	var out []*metricspb.Exemplar
	for _, e := range es {
		p := &metricspb.Exemplar{
			FilteredAttributes: Attributes(e.FilteredAttributes),
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
