package otlpwire

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/pem"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The requests are decoded as TracesData and MetricsData, which OTLP
// defines with the wire form of ExportTraceServiceRequest and
// ExportMetricsServiceRequest (field 1, repeated ResourceSpans or
// ResourceMetrics): the collector packages link gRPC and grpc-gateway.

// receiver is a test OTLP receiver over HTTP or h2c gRPC: it keeps each
// request's decoded body and answers as answer says (nil: OK).
type receiver struct {
	t      *testing.T
	grpc   bool
	mu     sync.Mutex
	bodies [][]byte
	paths  []string
	heads  []http.Header
	answer func(n int, w http.ResponseWriter) bool // true: answered
	srv    *httptest.Server
}

func newReceiver(t *testing.T, grpc bool) *receiver {
	r := &receiver{t: t, grpc: grpc}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	if grpc {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		r.srv.Config.Protocols = &p
	}
	r.srv.Start()
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	gz := req.Header.Get("Content-Encoding") == "gzip"
	if r.grpc {
		if req.ProtoMajor != 2 || req.Header.Get("Content-Type") != "application/grpc" || len(body) < 5 ||
			int(binary.BigEndian.Uint32(body[1:5])) != len(body)-5 {
			r.t.Errorf("not a gRPC request: %s %q, %d bytes", req.Proto, req.Header.Get("Content-Type"), len(body))
		}
		gz = body[0] == 1
		body = body[5:]
	}
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			r.t.Errorf("gzip: %v", err)
			return
		}
		body, _ = io.ReadAll(zr)
	}
	r.mu.Lock()
	n := len(r.bodies)
	r.bodies, r.paths, r.heads = append(r.bodies, body), append(r.paths, req.URL.Path), append(r.heads, req.Header.Clone())
	r.mu.Unlock()
	if r.answer != nil && r.answer(n, w) {
		return
	}
	if r.grpc {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Trailer", "grpc-status, grpc-message")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte{0, 0, 0, 0, 0}) // an empty ExportTraceServiceResponse
		w.Header().Set("grpc-status", "0")
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// grpcStatus answers a gRPC call with a status of its own.
func grpcStatus(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "grpc-status, grpc-message")
	w.WriteHeader(http.StatusOK)
	w.Header().Set("grpc-status", code)
	w.Header().Set("grpc-message", msg)
}

func (r *receiver) url() string { return r.srv.URL }

func noEnv(string) string { return "" }

// spans makes spans through the SDK with every kind of value, events,
// links, statuses and two scopes.
func spans(t *testing.T) []sdktrace.ReadOnlySpan {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.30.0",
		attribute.String("service.name", "svc"), attribute.Int64("pid", 42))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	tr := tp.Tracer("scope-a", trace.WithInstrumentationVersion("1.2"), trace.WithSchemaURL("https://x/schema"),
		trace.WithInstrumentationAttributes(attribute.Bool("scoped", true)))
	tr2 := tp.Tracer("scope-b")
	start := time.Unix(1_700_000_000, 123456789)
	ctx, root := tr.Start(context.Background(), "root", trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("s", "text ünïcode"), attribute.Int64("i", -7), attribute.Float64("f", math.Pi),
			attribute.Bool("b", true), attribute.StringSlice("ss", []string{"a", "", "c"}),
			attribute.Int64Slice("is", []int64{1, -2, 3}), attribute.Float64Slice("fs", []float64{0.5, -1e300}),
			attribute.BoolSlice("bs", []bool{true, false})))
	root.AddEvent("ev", trace.WithTimestamp(start.Add(time.Millisecond)), trace.WithAttributes(attribute.Int("n", 3)))
	root.AddEvent("bare", trace.WithTimestamp(start.Add(2*time.Millisecond)))
	root.SetStatus(codes.Error, "it broke")
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9, 9}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled, Remote: true})
	_, child := tr2.Start(ctx, "child", trace.WithTimestamp(start.Add(time.Second)), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("why", "retry")}}))
	child.SetStatus(codes.Ok, "")
	child.End(trace.WithTimestamp(start.Add(2 * time.Second)))
	_, plain := tr.Start(ctx, "plain")
	plain.End()
	root.End(trace.WithTimestamp(start.Add(3 * time.Second)))
	return rec.Ended()
}

func wantValue(t *testing.T, where string, v attribute.Value, got *commonpb.AnyValue) {
	t.Helper()
	var ok bool
	switch v.Type() {
	case attribute.BOOL:
		ok = got.GetValue() != nil && got.GetBoolValue() == v.AsBool()
		_, isBool := got.GetValue().(*commonpb.AnyValue_BoolValue)
		ok = ok && isBool
	case attribute.INT64:
		_, is := got.GetValue().(*commonpb.AnyValue_IntValue)
		ok = is && got.GetIntValue() == v.AsInt64()
	case attribute.FLOAT64:
		_, is := got.GetValue().(*commonpb.AnyValue_DoubleValue)
		ok = is && got.GetDoubleValue() == v.AsFloat64()
	case attribute.STRING:
		_, is := got.GetValue().(*commonpb.AnyValue_StringValue)
		ok = is && got.GetStringValue() == v.AsString()
	default:
		vs := got.GetArrayValue().GetValues()
		items := v.AsInterface()
		var want []attribute.Value
		switch x := items.(type) {
		case []bool:
			for _, e := range x {
				want = append(want, attribute.BoolValue(e))
			}
		case []int64:
			for _, e := range x {
				want = append(want, attribute.Int64Value(e))
			}
		case []float64:
			for _, e := range x {
				want = append(want, attribute.Float64Value(e))
			}
		case []string:
			for _, e := range x {
				want = append(want, attribute.StringValue(e))
			}
		}
		if len(vs) != len(want) {
			t.Errorf("%s: %d items, want %d", where, len(vs), len(want))
			return
		}
		for i := range want {
			wantValue(t, where, want[i], vs[i])
		}
		return
	}
	if !ok {
		t.Errorf("%s: got %v, want %s %v", where, got, v.Type(), v.Emit())
	}
}

func wantAttrs(t *testing.T, where string, want []attribute.KeyValue, got []*commonpb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d attributes, want %d", where, len(got), len(want))
	}
	byKey := map[string]*commonpb.AnyValue{}
	for _, kv := range got {
		byKey[kv.Key] = kv.Value
	}
	for _, kv := range want {
		g, ok := byKey[string(kv.Key)]
		if !ok {
			t.Errorf("%s: no attribute %s", where, kv.Key)
			continue
		}
		wantValue(t, where+"."+string(kv.Key), kv.Value, g)
	}
}

// TestTraceRoundTrip: spans sent over HTTP and gRPC (plain and gzip)
// decode, with the official message types, to what the SDK made.
func TestTraceRoundTrip(t *testing.T) {
	in := spans(t)
	for _, c := range []struct {
		proto, compression string
	}{{HTTP, ""}, {HTTP, "gzip"}, {GRPC, ""}, {GRPC, "gzip"}} {
		t.Run(c.proto+"/"+c.compression, func(t *testing.T) {
			r := newReceiver(t, c.proto == GRPC)
			env := map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": c.compression, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret"}
			e, err := NewTraceExporter(Config{URL: r.url(), Protocol: c.proto, Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.ExportSpans(context.Background(), in); err != nil {
				t.Fatal(err)
			}
			e.Shutdown(context.Background())
			wantPath := "/v1/traces"
			if c.proto == GRPC {
				wantPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
			}
			if len(r.paths) != 1 || r.paths[0] != wantPath {
				t.Fatalf("requests to %v, want one to %s", r.paths, wantPath)
			}
			if h := r.heads[0].Get("api-key"); h != "s ecret" {
				t.Errorf("api-key header %q", h)
			}
			var req tracepb.TracesData
			if err := proto.Unmarshal(r.bodies[0], &req); err != nil {
				t.Fatal(err)
			}
			checkSpans(t, in, &req)
		})
	}
}

func checkSpans(t *testing.T, in []sdktrace.ReadOnlySpan, req *tracepb.TracesData) {
	t.Helper()
	if len(req.ResourceSpans) != 1 {
		t.Fatalf("%d resources, want 1", len(req.ResourceSpans))
	}
	rs := req.ResourceSpans[0]
	wantAttrs(t, "resource", in[0].Resource().Attributes(), rs.Resource.Attributes)
	if rs.SchemaUrl != in[0].Resource().SchemaURL() {
		t.Errorf("resource schema %q", rs.SchemaUrl)
	}
	got := map[string]*tracepb.Span{}
	scopes := map[string]*tracepb.ScopeSpans{}
	for _, ss := range rs.ScopeSpans {
		scopes[ss.Scope.Name] = ss
		for _, s := range ss.Spans {
			got[s.Name] = s
			if ss.Scope.Name == "" {
				t.Errorf("span %s in a scope without a name", s.Name)
			}
		}
	}
	if len(scopes) != 2 || len(got) != len(in) {
		t.Fatalf("%d scopes and %d spans, want 2 and %d", len(scopes), len(got), len(in))
	}
	if a := scopes["scope-a"]; a.Scope.Version != "1.2" || a.SchemaUrl != "https://x/schema" || len(a.Spans) != 2 {
		t.Errorf("scope-a: %v", a)
	} else {
		wantAttrs(t, "scope-a", []attribute.KeyValue{attribute.Bool("scoped", true)}, a.Scope.Attributes)
	}
	for _, s := range in {
		g := got[s.Name()]
		if g == nil {
			t.Errorf("span %s not sent", s.Name())
			continue
		}
		sc := s.SpanContext()
		if !bytes.Equal(g.TraceId, tidBytes(sc.TraceID())) || !bytes.Equal(g.SpanId, sidBytes(sc.SpanID())) {
			t.Errorf("%s: ids %x %x", s.Name(), g.TraceId, g.SpanId)
		}
		if p := s.Parent(); p.IsValid() != (len(g.ParentSpanId) > 0) || p.IsValid() && !bytes.Equal(g.ParentSpanId, sidBytes(p.SpanID())) {
			t.Errorf("%s: parent %x, want %v", s.Name(), g.ParentSpanId, p.SpanID())
		}
		if g.Flags&0xff != uint32(sc.TraceFlags()) || g.Flags&flagHasIsRemote == 0 || g.Flags&flagIsRemote != 0 {
			t.Errorf("%s: flags %#x", s.Name(), g.Flags)
		}
		if int(g.Kind) != int(s.SpanKind()) {
			t.Errorf("%s: kind %v, want %v", s.Name(), g.Kind, s.SpanKind())
		}
		if g.StartTimeUnixNano != uint64(s.StartTime().UnixNano()) || g.EndTimeUnixNano != uint64(s.EndTime().UnixNano()) {
			t.Errorf("%s: times %d..%d", s.Name(), g.StartTimeUnixNano, g.EndTimeUnixNano)
		}
		wantAttrs(t, s.Name(), s.Attributes(), g.Attributes)
		wantCode := map[codes.Code]tracepb.Status_StatusCode{codes.Unset: tracepb.Status_STATUS_CODE_UNSET,
			codes.Ok: tracepb.Status_STATUS_CODE_OK, codes.Error: tracepb.Status_STATUS_CODE_ERROR}[s.Status().Code]
		if g.Status.GetCode() != wantCode || g.Status.GetMessage() != s.Status().Description {
			t.Errorf("%s: status %v, want %v %q", s.Name(), g.Status, wantCode, s.Status().Description)
		}
		if len(g.Events) != len(s.Events()) {
			t.Errorf("%s: %d events, want %d", s.Name(), len(g.Events), len(s.Events()))
		} else {
			for i, e := range s.Events() {
				if g.Events[i].Name != e.Name || g.Events[i].TimeUnixNano != uint64(e.Time.UnixNano()) {
					t.Errorf("%s: event %d is %v", s.Name(), i, g.Events[i])
				}
				wantAttrs(t, s.Name()+" event "+e.Name, e.Attributes, g.Events[i].Attributes)
			}
		}
		if len(g.Links) != len(s.Links()) {
			t.Errorf("%s: %d links, want %d", s.Name(), len(g.Links), len(s.Links()))
		} else {
			for i, l := range s.Links() {
				gl := g.Links[i]
				if !bytes.Equal(gl.TraceId, tidBytes(l.SpanContext.TraceID())) || !bytes.Equal(gl.SpanId, sidBytes(l.SpanContext.SpanID())) ||
					gl.Flags != uint32(l.SpanContext.TraceFlags())|flagHasIsRemote|flagIsRemote {
					t.Errorf("%s: link %d is %v", s.Name(), i, gl)
				}
				wantAttrs(t, s.Name()+" link", l.Attributes, gl.Attributes)
			}
		}
	}
}

// TestMetricsRoundTrip: gauges, sums and histograms, in both
// temporalities, arrive as the SDK collected them.
func TestMetricsRoundTrip(t *testing.T) {
	for _, pref := range []string{"cumulative", "delta"} {
		t.Run(pref, func(t *testing.T) {
			r := newReceiver(t, true)
			env := map[string]string{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": pref}
			e, err := NewMetricExporter(Config{URL: r.url(), Protocol: GRPC, Getenv: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(e.Temporality))
			res := resource.NewSchemaless(attribute.String("service.name", "svc"))
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
			m := mp.Meter("meter", metric.WithInstrumentationVersion("0.1"))
			ctx := context.Background()
			ic, _ := m.Int64Counter("ic", metric.WithUnit("{call}"), metric.WithDescription("calls"))
			ic.Add(ctx, 3, metric.WithAttributes(attribute.String("k", "v")))
			ic.Add(ctx, 4, metric.WithAttributes(attribute.String("k", "w")))
			fu, _ := m.Float64UpDownCounter("fu")
			fu.Add(ctx, -1.5)
			ig, _ := m.Int64Gauge("ig")
			ig.Record(ctx, 17)
			fg, _ := m.Float64Gauge("fg")
			fg.Record(ctx, 2.25, metric.WithAttributes(attribute.Bool("b", true)))
			fh, _ := m.Float64Histogram("fh", metric.WithExplicitBucketBoundaries(1, 10))
			fh.Record(ctx, 0.5)
			fh.Record(ctx, 5)
			fh.Record(ctx, 50, metric.WithAttributes(attribute.Int("n", 1)))
			ih, _ := m.Int64Histogram("ih")
			ih.Record(ctx, 7)
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			if err := e.Export(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			if len(r.bodies) != 1 || r.paths[0] != "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export" {
				t.Fatalf("requests to %v", r.paths)
			}
			var req metricspb.MetricsData
			if err := proto.Unmarshal(r.bodies[0], &req); err != nil {
				t.Fatal(err)
			}
			checkMetrics(t, &rm, &req, pref)
		})
	}
}

func checkMetrics(t *testing.T, rm *metricdata.ResourceMetrics, req *metricspb.MetricsData, pref string) {
	t.Helper()
	if len(req.ResourceMetrics) != 1 || len(req.ResourceMetrics[0].ScopeMetrics) != 1 {
		t.Fatalf("request %v", req)
	}
	wantAttrs(t, "resource", rm.Resource.Attributes(), req.ResourceMetrics[0].Resource.Attributes)
	sm := req.ResourceMetrics[0].ScopeMetrics[0]
	if sm.Scope.Name != "meter" || sm.Scope.Version != "0.1" {
		t.Errorf("scope %v", sm.Scope)
	}
	got := map[string]*metricspb.Metric{}
	for _, m := range sm.Metrics {
		got[m.Name] = m
	}
	if len(got) != len(rm.ScopeMetrics[0].Metrics) {
		t.Errorf("%d metrics, want %d", len(got), len(rm.ScopeMetrics[0].Metrics))
	}
	deltaTemp := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	if pref == "delta" {
		deltaTemp = metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
	}
	cumulative := metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE
	for _, m := range rm.ScopeMetrics[0].Metrics {
		g := got[m.Name]
		if g == nil {
			t.Errorf("metric %s not sent", m.Name)
			continue
		}
		if g.Unit != m.Unit || g.Description != m.Description {
			t.Errorf("%s: unit %q description %q", m.Name, g.Unit, g.Description)
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			s := g.GetSum()
			if s == nil || s.AggregationTemporality != deltaTemp || !s.IsMonotonic {
				t.Fatalf("%s: %v", m.Name, g)
			}
			checkNumbers(t, m.Name, d.DataPoints, s.DataPoints)
		case metricdata.Sum[float64]:
			s := g.GetSum()
			if s == nil || s.AggregationTemporality != cumulative || s.IsMonotonic {
				t.Fatalf("%s: %v", m.Name, g)
			}
			checkNumbers(t, m.Name, d.DataPoints, s.DataPoints)
		case metricdata.Gauge[int64]:
			checkNumbers(t, m.Name, d.DataPoints, g.GetGauge().GetDataPoints())
		case metricdata.Gauge[float64]:
			checkNumbers(t, m.Name, d.DataPoints, g.GetGauge().GetDataPoints())
		case metricdata.Histogram[int64]:
			if g.GetHistogram().GetAggregationTemporality() != deltaTemp {
				t.Errorf("%s: temporality %v", m.Name, g.GetHistogram().GetAggregationTemporality())
			}
			checkHist(t, m.Name, d.DataPoints, g.GetHistogram().GetDataPoints())
		case metricdata.Histogram[float64]:
			if g.GetHistogram().GetAggregationTemporality() != deltaTemp {
				t.Errorf("%s: temporality %v", m.Name, g.GetHistogram().GetAggregationTemporality())
			}
			checkHist(t, m.Name, d.DataPoints, g.GetHistogram().GetDataPoints())
		default:
			t.Errorf("%s: unexpected %T", m.Name, d)
		}
	}
}

func checkNumbers[N int64 | float64](t *testing.T, name string, want []metricdata.DataPoint[N], got []*metricspb.NumberDataPoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d points, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		var v N
		switch x := g.Value.(type) {
		case *metricspb.NumberDataPoint_AsInt:
			v = N(x.AsInt)
			if _, isInt := any(v).(int64); !isInt {
				t.Errorf("%s: an int for a float", name)
			}
		case *metricspb.NumberDataPoint_AsDouble:
			v = N(x.AsDouble)
			if _, isF := any(v).(float64); !isF {
				t.Errorf("%s: a double for an int", name)
			}
		}
		if v != w.Value || g.TimeUnixNano != uint64(w.Time.UnixNano()) || g.StartTimeUnixNano != uint64(w.StartTime.UnixNano()) {
			t.Errorf("%s: point %v, want %v", name, g, w)
		}
		wantAttrs(t, name, w.Attributes.ToSlice(), g.Attributes)
	}
}

func checkHist[N int64 | float64](t *testing.T, name string, want []metricdata.HistogramDataPoint[N], got []*metricspb.HistogramDataPoint) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d points, want %d", name, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		mn, _ := w.Min.Value()
		mx, _ := w.Max.Value()
		if g.Count != w.Count || g.GetSum() != float64(w.Sum) || g.GetMin() != float64(mn) || g.GetMax() != float64(mx) ||
			!slices.Equal(g.BucketCounts, w.BucketCounts) || !slices.Equal(g.ExplicitBounds, w.Bounds) || g.TimeUnixNano != uint64(w.Time.UnixNano()) {
			t.Errorf("%s: point %v, want %+v", name, g, w)
		}
		wantAttrs(t, name, w.Attributes.ToSlice(), g.Attributes)
	}
}

// TestGRPCRetriesUnavailable: UNAVAILABLE is retried and the next OK
// ends the export; with NoRetry it is the error.
func TestGRPCRetriesUnavailable(t *testing.T) {
	in := spans(t)
	for _, noRetry := range []bool{false, true} {
		r := newReceiver(t, true)
		r.answer = func(n int, w http.ResponseWriter) bool {
			if n == 0 {
				grpcStatus(w, "14", "try%20again")
				return true
			}
			return false
		}
		e, err := NewTraceExporter(Config{URL: r.url(), Protocol: GRPC, NoRetry: noRetry, Getenv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		e.s.first = time.Millisecond
		err = e.ExportSpans(context.Background(), in)
		if noRetry {
			if err == nil || !strings.Contains(err.Error(), "UNAVAILABLE: try again") || len(r.bodies) != 1 {
				t.Errorf("no retry: err %v after %d requests", err, len(r.bodies))
			}
			continue
		}
		if err != nil || len(r.bodies) != 2 {
			t.Errorf("err %v after %d requests, want nil after 2", err, len(r.bodies))
		}
		if len(r.bodies) == 2 && !bytes.Equal(r.bodies[0], r.bodies[1]) {
			t.Error("the retry sent another body")
		}
	}
}

// TestGRPCBadStatus: a status that will not pass is reported with its
// message, once.
func TestGRPCBadStatus(t *testing.T) {
	r := newReceiver(t, true)
	r.answer = func(n int, w http.ResponseWriter) bool {
		grpcStatus(w, "3", "span%20name%20too%20long")
		return true
	}
	e, err := NewTraceExporter(Config{URL: r.url(), Protocol: GRPC, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	err = e.ExportSpans(context.Background(), spans(t))
	if err == nil || !strings.Contains(err.Error(), "INVALID_ARGUMENT: span name too long") || len(r.bodies) != 1 {
		t.Errorf("err %v after %d requests", err, len(r.bodies))
	}
}

// TestHTTPRetryAfter: a 503 with Retry-After is retried; a 400 is the
// error with the receiver's words; a partial success is reported.
func TestHTTPRetryAfter(t *testing.T) {
	in := spans(t)
	r := newReceiver(t, false)
	r.answer = func(n int, w http.ResponseWriter) bool {
		switch n {
		case 0:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		case 1:
			// ExportTraceServiceResponse{partial_success{rejected_spans: 2, error_message: "too old"}}
			w.WriteHeader(http.StatusOK)
			w.Write([]byte{0x0a, 0x0b, 0x08, 0x02, 0x12, 0x07, 't', 'o', 'o', ' ', 'o', 'l', 'd'})
			return true
		}
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, "bad protobuf")
		return true
	}
	var partial []error
	e, err := NewTraceExporter(Config{URL: r.url() + "/", Getenv: noEnv, OnPartial: func(err error) { partial = append(partial, err) }})
	if err != nil {
		t.Fatal(err)
	}
	e.s.first = time.Millisecond
	if err := e.ExportSpans(context.Background(), in); err != nil || len(r.bodies) != 2 {
		t.Fatalf("err %v after %d requests, want nil after 2", err, len(r.bodies))
	}
	if len(partial) != 1 || !strings.Contains(partial[0].Error(), "rejected 2 spans: too old") {
		t.Errorf("partial successes %v", partial)
	}
	err = e.ExportSpans(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: bad protobuf") || len(r.bodies) != 3 {
		t.Errorf("err %v after %d requests", err, len(r.bodies))
	}
}

// TestEndpointFromEnv: the variables give endpoints per signal, the
// gRPC host:port with INSECURE, headers, timeout; bad ones are errors.
func TestEndpointFromEnv(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://c:4318/",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:1/custom",
		"OTEL_EXPORTER_OTLP_TIMEOUT":          "2500",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":   "a=1,b=x%3Dy",
	}
	get := func(k string) string { return env[k] }
	tr, err := newSender(Config{Getenv: get, Headers: map[string]string{"a": "flag"}}, traces)
	if err != nil {
		t.Fatal(err)
	}
	if tr.url != "http://c:4318/v1/traces" || tr.timeout != 2500*time.Millisecond || tr.headers["a"] != "flag" || tr.headers["b"] != "x=y" {
		t.Errorf("traces: %s %s %v", tr.url, tr.timeout, tr.headers)
	}
	me, err := newSender(Config{Getenv: get}, metrics)
	if err != nil || me.url != "http://m:1/custom" {
		t.Errorf("metrics: %v %v", me, err)
	}
	env = map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_EXPORTER_OTLP_INSECURE": "true"}
	g, err := newSender(Config{Getenv: get, Protocol: GRPC}, traces)
	if err != nil || g.url != "http://collector:4317/opentelemetry.proto.collector.trace.v1.TraceService/Export" {
		t.Errorf("grpc: %v %v", g, err)
	}
	env = map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}
	if _, err := newSender(Config{Getenv: get}, traces); err == nil || !strings.Contains(err.Error(), `"zstd"`) {
		t.Errorf("compression zstd: %v", err)
	}
}

func tidBytes(id trace.TraceID) []byte { return id[:] }
func sidBytes(id trace.SpanID) []byte  { return id[:] }

// TestBadHeadersVariable: a malformed OTEL_EXPORTER_OTLP_HEADERS is an
// error naming the variable, not headers silently dropped.
func TestBadHeadersVariable(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key"}
	_, err := NewTraceExporter(Config{URL: "http://127.0.0.1:1", Getenv: func(k string) string { return env[k] }})
	if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_TRACES_HEADERS") || !strings.Contains(err.Error(), "name=value") {
		t.Errorf("err %v", err)
	}
}

// TestGRPCOverTLS: an https:// endpoint is gRPC over TLS (HTTP/2 by
// ALPN), its certificate trusted through OTEL_EXPORTER_OTLP_CERTIFICATE.
func TestGRPCOverTLS(t *testing.T) {
	r := &receiver{t: t, grpc: true}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.EnableHTTP2 = true
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": ca}
	e, err := NewTraceExporter(Config{URL: r.srv.URL, Protocol: GRPC, NoRetry: true, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), spans(t)); err != nil || len(r.bodies) != 1 {
		t.Fatalf("err %v after %d requests", err, len(r.bodies))
	}
	// Without the certificate, the receiver is not trusted.
	e, err = NewTraceExporter(Config{URL: r.srv.URL, Protocol: GRPC, NoRetry: true, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ExportSpans(context.Background(), spans(t)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("an untrusted receiver: err %v", err)
	}
}

// TestMetricsNotTaken: a receiver with no metrics service (Jaeger: 404
// on /v1/metrics, gRPC UNIMPLEMENTED) is no failed export: Export says
// nothing wrong, NotTaken says what the receiver answered, and later
// collections are not sent. Any other refusal is still an error.
func TestMetricsNotTaken(t *testing.T) {
	rm := &metricdata.ResourceMetrics{Resource: resource.NewSchemaless(attribute.String("service.name", "svc"))}
	for _, c := range []struct {
		name   string
		grpc   bool
		answer func(w http.ResponseWriter)
		want   string // in NotTaken, "" for an error from Export
	}{
		{"http 404", false, func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "404 page not found")
		}, "404 Not Found"},
		{"http 501", false, func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotImplemented) }, "501 Not Implemented"},
		{"grpc unimplemented", true, func(w http.ResponseWriter) { grpcStatus(w, "12", "unknown%20service") }, "UNIMPLEMENTED: unknown service"},
		{"http 400", false, func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReceiver(t, c.grpc)
			r.answer = func(n int, w http.ResponseWriter) bool { c.answer(w); return true }
			cfg := Config{URL: r.url(), Getenv: noEnv}
			if c.grpc {
				cfg.Protocol = GRPC
			}
			e, err := NewMetricExporter(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = e.Export(context.Background(), rm)
			if c.want == "" {
				if err == nil || e.NotTaken() != nil {
					t.Fatalf("a 400: Export %v, NotTaken %v; want the error, not a receiver without metrics", err, e.NotTaken())
				}
				return
			}
			if err != nil || e.NotTaken() == nil || !strings.Contains(e.NotTaken().Error(), c.want) {
				t.Fatalf("Export %v, NotTaken %v; want nil and %q", err, e.NotTaken(), c.want)
			}
			if err := e.Export(context.Background(), rm); err != nil || len(r.bodies) != 1 {
				t.Errorf("after the receiver said it takes no metrics: Export %v, %d requests in all (want 1)", err, len(r.bodies))
			}
		})
	}
}
