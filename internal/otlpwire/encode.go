package otlpwire

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The requests are ExportTraceServiceRequest and
// ExportMetricsServiceRequest: one repeated field (1) of ResourceSpans or
// ResourceMetrics (opentelemetry-proto's collector, trace and metrics
// protos; the field numbers below are theirs).

// TraceRequest encodes spans as an ExportTraceServiceRequest, grouped by
// resource and instrumentation scope in the order they first appear.
func TraceRequest(spans []sdktrace.ReadOnlySpan) ([]byte, error) {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	type scopeSpans struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourceSpans struct {
		res    *resource.Resource
		scopes []*scopeSpans
	}
	var out []*resourceSpans
	byRes := map[*resource.Resource]*resourceSpans{}
	byScope := map[scopeKey]*scopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := byRes[res]
		if !ok {
			rs = &resourceSpans{res: res}
			byRes[res] = rs
			out = append(out, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss, ok := byScope[k]
		if !ok {
			ss = &scopeSpans{scope: k.scope}
			byScope[k] = ss
			rs.scopes = append(rs.scopes, ss)
		}
		ss.spans = append(ss.spans, s)
	}
	var b []byte
	for _, rs := range out {
		b = appendMessage(b, 1, func(b []byte) []byte { // ResourceSpans
			b = appendResource(b, 1, rs.res)
			for _, ss := range rs.scopes {
				b = appendMessage(b, 2, func(b []byte) []byte { // ScopeSpans
					b = appendScope(b, 1, ss.scope)
					for _, s := range ss.spans {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, 3, ss.scope.SchemaURL)
				})
			}
			return appendString(b, 3, schemaURL(rs.res))
		})
	}
	return b, nil
}

func schemaURL(r *resource.Resource) string {
	if r == nil {
		return ""
	}
	return r.SchemaURL()
}

// MetricsRequest encodes one ResourceMetrics as an
// ExportMetricsServiceRequest.
func MetricsRequest(rm *metricdata.ResourceMetrics) ([]byte, error) {
	return appendMessage(nil, 1, func(b []byte) []byte { // ResourceMetrics
		b = appendResource(b, 1, rm.Resource)
		for _, sm := range rm.ScopeMetrics {
			b = appendMessage(b, 2, func(b []byte) []byte { // ScopeMetrics
				b = appendScope(b, 1, sm.Scope)
				for _, m := range sm.Metrics {
					if known(m.Data) {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendMetric(b, m) })
					}
				}
				return appendString(b, 3, sm.Scope.SchemaURL)
			})
		}
		return appendString(b, 3, schemaURL(rm.Resource))
	}), nil
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
		num, typ, n := consumeTag(b)
		if n < 0 {
			return p, false
		}
		b = b[n:]
		if num == 1 && typ == wireBytes {
			v, n := consumeBytes(b)
			if n < 0 {
				return p, false
			}
			found = true
			for len(v) > 0 {
				fn, ft, k := consumeTag(v)
				if k < 0 {
					return p, false
				}
				v = v[k:]
				switch {
				case fn == 1 && ft == wireVarint:
					x, k := consumeVarint(v)
					if k < 0 {
						return p, false
					}
					p.rejected, v = int64(x), v[k:]
				case fn == 2 && ft == wireBytes:
					s, k := consumeBytes(v)
					if k < 0 {
						return p, false
					}
					p.message, v = string(s), v[k:]
				default:
					k := consumeValue(ft, v)
					if k < 0 {
						return p, false
					}
					v = v[k:]
				}
			}
			b = b[n:]
			continue
		}
		n = consumeValue(typ, b)
		if n < 0 {
			return p, false
		}
		b = b[n:]
	}
	return p, found && (p.rejected != 0 || p.message != "")
}

// appendResource writes a Resource (attributes 1) as field num.
func appendResource(b []byte, num int, r *resource.Resource) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		if r == nil {
			return b
		}
		return appendAttributes(b, 1, r.Attributes())
	})
}

// appendScope writes an InstrumentationScope (name 1, version 2,
// attributes 3) as field num.
func appendScope(b []byte, num int, s instrumentation.Scope) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		b = appendString(b, 1, s.Name)
		b = appendString(b, 2, s.Version)
		return appendAttributes(b, 3, s.Attributes.ToSlice())
	})
}

// appendAttributes writes key-values as repeated KeyValue field num (key
// 1, value 2).
func appendAttributes(b []byte, num int, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, 1, string(kv.Key))
			return appendMessage(b, 2, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// AnyValue's oneof: string 1, bool 2, int 3, double 4, array 5 (an
// ArrayValue: repeated AnyValue 1). A oneof's member is written even at
// its zero value.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		return appendOneBool(b, v.AsBool())
	case attribute.INT64:
		return appendOneInt(b, v.AsInt64())
	case attribute.FLOAT64:
		return appendOneDouble(b, 4, v.AsFloat64())
	case attribute.STRING:
		return appendOneString(b, v.AsString())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), appendOneBool)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), appendOneInt)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), func(b []byte, x float64) []byte { return appendOneDouble(b, 4, x) })
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), appendOneString)
	}
	return appendOneString(b, "INVALID")
}

func appendOneString(b []byte, s string) []byte {
	b = appendTag(b, 1, wireBytes)
	return append(appendUvarint(b, uint64(len(s))), s...)
}

func appendOneBool(b []byte, v bool) []byte {
	x := byte(0)
	if v {
		x = 1
	}
	return append(appendTag(b, 2, wireVarint), x)
}

func appendOneInt(b []byte, v int64) []byte {
	return appendUvarint(appendTag(b, 3, wireVarint), uint64(v))
}

// appendOneDouble writes a double that has presence (a oneof's member,
// an optional field) as field num.
func appendOneDouble(b []byte, num int, v float64) []byte {
	return appendLE64(appendTag(b, num, wireFixed64), math.Float64bits(v))
}

// appendOneFixed64 writes a fixed64 with presence (sfixed64 in a oneof).
func appendOneFixed64(b []byte, num int, v uint64) []byte {
	return appendLE64(appendTag(b, num, wireFixed64), v)
}

func appendArray[T any](b []byte, xs []T, one func([]byte, T) []byte) []byte {
	return appendMessage(b, 5, func(b []byte) []byte {
		for _, x := range xs {
			b = appendMessage(b, 1, func(b []byte) []byte { return one(b, x) })
		}
		return b
	})
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

// appendSpan writes a Span's fields: trace_id 1, span_id 2, trace_state
// 3, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9,
// dropped attributes 10, events 11, dropped events 12, links 13, dropped
// links 14, status 15, flags 16.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	fl := uint32(sc.TraceFlags()) | flagHasIsRemote
	if par := s.Parent(); par.SpanID().IsValid() {
		psid := par.SpanID()
		b = appendBytes(b, 4, psid[:])
		fl = flags(par)&^0xff | uint32(sc.TraceFlags())
	}
	b = appendString(b, 5, s.Name())
	kind := s.SpanKind() // OTLP's SpanKind has the same numbers
	if kind == trace.SpanKindUnspecified {
		kind = trace.SpanKindInternal
	}
	b = appendVarint(b, 6, uint64(kind))
	b = appendFixed64(b, 7, nanos(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, nanos(s.EndTime().UnixNano()))
	b = appendAttributes(b, 9, s.Attributes())
	b = appendVarint(b, 10, uint64(uint32(s.DroppedAttributes())))
	for _, e := range s.Events() { // time 1, name 2, attributes 3, dropped 4
		b = appendMessage(b, 11, func(b []byte) []byte {
			b = appendFixed64(b, 1, nanos(e.Time.UnixNano()))
			b = appendString(b, 2, e.Name)
			b = appendAttributes(b, 3, e.Attributes)
			return appendVarint(b, 4, uint64(uint32(e.DroppedAttributeCount)))
		})
	}
	b = appendVarint(b, 12, uint64(uint32(s.DroppedEvents())))
	for _, l := range s.Links() { // trace_id 1, span_id 2, trace_state 3, attributes 4, dropped 5, flags 6
		b = appendMessage(b, 13, func(b []byte) []byte {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			b = appendString(b, 3, l.SpanContext.TraceState().String())
			b = appendAttributes(b, 4, l.Attributes)
			b = appendVarint(b, 5, uint64(uint32(l.DroppedAttributeCount)))
			return appendFixed32(b, 6, flags(l.SpanContext))
		})
	}
	b = appendVarint(b, 14, uint64(uint32(s.DroppedLinks())))
	b = appendMessage(b, 15, func(b []byte) []byte { // Status: message 2, code 3 (OK 1, ERROR 2)
		switch st := s.Status(); st.Code {
		case codes.Ok:
			b = appendVarint(b, 3, 1)
		case codes.Error:
			b = appendString(b, 2, st.Description)
			b = appendVarint(b, 3, 2)
		}
		return b
	})
	return appendFixed32(b, 16, fl)
}

func nanos(n int64) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// temporality is AggregationTemporality: delta 1, cumulative 2.
func temporality(t metricdata.Temporality) uint64 {
	switch t {
	case metricdata.DeltaTemporality:
		return 1
	case metricdata.CumulativeTemporality:
		return 2
	}
	return 0
}

// known says whether OTLP has the aggregation (the others are left out).
func known(data metricdata.Aggregation) bool {
	switch data.(type) {
	case metricdata.Gauge[int64], metricdata.Gauge[float64], metricdata.Sum[int64], metricdata.Sum[float64],
		metricdata.Histogram[int64], metricdata.Histogram[float64],
		metricdata.ExponentialHistogram[int64], metricdata.ExponentialHistogram[float64], metricdata.Summary:
		return true
	}
	return false
}

// appendMetric writes a Metric's fields: name 1, description 2, unit 3,
// and one of gauge 5, sum 7, histogram 9, exponential histogram 10,
// summary 11. Gauge: data points 1; Sum: data points 1, temporality 2,
// monotonic 3; the histograms: data points 1, temporality 2; Summary:
// data points 1.
func appendMetric(b []byte, m metricdata.Metrics) []byte {
	b = appendString(b, 1, m.Name)
	b = appendString(b, 2, m.Description)
	b = appendString(b, 3, m.Unit)
	switch a := m.Data.(type) {
	case metricdata.Gauge[int64]:
		b = appendMessage(b, 5, func(b []byte) []byte { return appendNumbers(b, a.DataPoints) })
	case metricdata.Gauge[float64]:
		b = appendMessage(b, 5, func(b []byte) []byte { return appendNumbers(b, a.DataPoints) })
	case metricdata.Sum[int64]:
		b = appendMessage(b, 7, func(b []byte) []byte {
			return appendBool(appendVarint(appendNumbers(b, a.DataPoints), 2, temporality(a.Temporality)), 3, a.IsMonotonic)
		})
	case metricdata.Sum[float64]:
		b = appendMessage(b, 7, func(b []byte) []byte {
			return appendBool(appendVarint(appendNumbers(b, a.DataPoints), 2, temporality(a.Temporality)), 3, a.IsMonotonic)
		})
	case metricdata.Histogram[int64]:
		b = appendMessage(b, 9, func(b []byte) []byte {
			return appendVarint(appendHistogram(b, a.DataPoints), 2, temporality(a.Temporality))
		})
	case metricdata.Histogram[float64]:
		b = appendMessage(b, 9, func(b []byte) []byte {
			return appendVarint(appendHistogram(b, a.DataPoints), 2, temporality(a.Temporality))
		})
	case metricdata.ExponentialHistogram[int64]:
		b = appendMessage(b, 10, func(b []byte) []byte {
			return appendVarint(appendExpHistogram(b, a.DataPoints), 2, temporality(a.Temporality))
		})
	case metricdata.ExponentialHistogram[float64]:
		b = appendMessage(b, 10, func(b []byte) []byte {
			return appendVarint(appendExpHistogram(b, a.DataPoints), 2, temporality(a.Temporality))
		})
	case metricdata.Summary:
		b = appendMessage(b, 11, func(b []byte) []byte { return appendSummary(b, a.DataPoints) })
	}
	return b
}

// appendNumbers writes NumberDataPoints as field 1: start 2, time 3,
// exemplars 5, attributes 7, then one of as_double 4 or as_int 6
// (sfixed64).
func appendNumbers[N int64 | float64](b []byte, dps []metricdata.DataPoint[N]) []byte {
	for _, d := range dps {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendFixed64(b, 2, nanos(d.StartTime.UnixNano()))
			b = appendFixed64(b, 3, nanos(d.Time.UnixNano()))
			b = appendExemplars(b, 5, d.Exemplars)
			b = appendAttributes(b, 7, d.Attributes.ToSlice())
			return appendNumber(b, 4, 6, d.Value)
		})
	}
	return b
}

// appendNumber writes a oneof of a double (field asDouble) or an sfixed64
// (field asInt).
func appendNumber[N int64 | float64](b []byte, asDouble, asInt int, v N) []byte {
	switch x := any(v).(type) {
	case int64:
		return appendOneFixed64(b, asInt, uint64(x))
	case float64:
		return appendOneDouble(b, asDouble, x)
	}
	return b
}

// appendHistogram writes HistogramDataPoints as field 1: start 2, time
// 3, count 4, sum 5 (optional), bucket counts 6, bounds 7, exemplars 8,
// attributes 9, min 11, max 12 (optional).
func appendHistogram[N int64 | float64](b []byte, dps []metricdata.HistogramDataPoint[N]) []byte {
	for _, d := range dps {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendFixed64(b, 2, nanos(d.StartTime.UnixNano()))
			b = appendFixed64(b, 3, nanos(d.Time.UnixNano()))
			b = appendFixed64(b, 4, d.Count)
			b = appendOneDouble(b, 5, float64(d.Sum))
			b = appendPacked(b, 6, d.BucketCounts, appendLE64)
			b = appendPacked(b, 7, d.Bounds, func(b []byte, x float64) []byte { return appendLE64(b, math.Float64bits(x)) })
			b = appendExemplars(b, 8, d.Exemplars)
			b = appendAttributes(b, 9, d.Attributes.ToSlice())
			return appendExtrema(b, 11, 12, d.Min, d.Max)
		})
	}
	return b
}

// appendExtrema writes a histogram's minimum and maximum, each when set.
func appendExtrema[N int64 | float64](b []byte, minNum, maxNum int, lo, hi metricdata.Extrema[N]) []byte {
	if v, ok := lo.Value(); ok {
		b = appendOneDouble(b, minNum, float64(v))
	}
	if v, ok := hi.Value(); ok {
		b = appendOneDouble(b, maxNum, float64(v))
	}
	return b
}

// appendExpHistogram writes ExponentialHistogramDataPoints as field 1:
// attributes 1, start 2, time 3, count 4, sum 5 (optional), scale 6
// (sint32), zero count 7, positive 8, negative 9 (Buckets: offset 1
// sint32, counts 2 packed varints), exemplars 11, min 12, max 13, zero
// threshold 14.
func appendExpHistogram[N int64 | float64](b []byte, dps []metricdata.ExponentialHistogramDataPoint[N]) []byte {
	buckets := func(b []byte, num int, bk metricdata.ExponentialBucket) []byte {
		return appendMessage(b, num, func(b []byte) []byte {
			b = appendVarint(b, 1, zigzag32(bk.Offset))
			return appendPacked(b, 2, bk.Counts, appendUvarint)
		})
	}
	for _, d := range dps {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendAttributes(b, 1, d.Attributes.ToSlice())
			b = appendFixed64(b, 2, nanos(d.StartTime.UnixNano()))
			b = appendFixed64(b, 3, nanos(d.Time.UnixNano()))
			b = appendFixed64(b, 4, d.Count)
			b = appendOneDouble(b, 5, float64(d.Sum))
			b = appendVarint(b, 6, zigzag32(d.Scale))
			b = appendFixed64(b, 7, d.ZeroCount)
			b = buckets(b, 8, d.PositiveBucket)
			b = buckets(b, 9, d.NegativeBucket)
			b = appendExemplars(b, 11, d.Exemplars)
			b = appendExtrema(b, 12, 13, d.Min, d.Max)
			return appendDouble(b, 14, d.ZeroThreshold)
		})
	}
	return b
}

// appendSummary writes SummaryDataPoints as field 1: start 2, time 3,
// count 4, sum 5, quantiles 6 (quantile 1, value 2), attributes 7.
func appendSummary(b []byte, dps []metricdata.SummaryDataPoint) []byte {
	for _, d := range dps {
		b = appendMessage(b, 1, func(b []byte) []byte {
			b = appendFixed64(b, 2, nanos(d.StartTime.UnixNano()))
			b = appendFixed64(b, 3, nanos(d.Time.UnixNano()))
			b = appendFixed64(b, 4, d.Count)
			b = appendDouble(b, 5, d.Sum)
			for _, q := range d.QuantileValues {
				b = appendMessage(b, 6, func(b []byte) []byte {
					return appendDouble(appendDouble(b, 1, q.Quantile), 2, q.Value)
				})
			}
			return appendAttributes(b, 7, d.Attributes.ToSlice())
		})
	}
	return b
}

// appendExemplars writes Exemplars as field num: time 2, span_id 4,
// trace_id 5, filtered attributes 7, then one of as_double 3 or as_int 6
// (sfixed64).
func appendExemplars[N int64 | float64](b []byte, num int, es []metricdata.Exemplar[N]) []byte {
	for _, e := range es {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendFixed64(b, 2, nanos(e.Time.UnixNano()))
			b = appendBytes(b, 4, e.SpanID)
			b = appendBytes(b, 5, e.TraceID)
			b = appendAttributes(b, 7, e.FilteredAttributes)
			return appendNumber(b, 3, 6, e.Value)
		})
	}
	return b
}

func zigzag32(v int32) uint64 { return uint64(uint32(v<<1) ^ uint32(v>>31)) }
