package export

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/jaegertest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// traceOf reads a tape's trace back from Jaeger: spans by id.
func traceOf(t *testing.T, j *jaegertest.Jaeger, path string, spans int) map[string]jaegertest.Span {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	id := tp.ID()
	tp.Close()
	tr := j.WaitTrace(t, fmtID(id), spans)
	out := map[string]jaegertest.Span{}
	for _, s := range tr.Spans {
		out[s.ID] = s
	}
	if len(out) != spans {
		t.Errorf("%d spans in Jaeger, want %d", len(out), spans)
	}
	return out
}

func fmtID(id [16]byte) string { return strings.ToLower(strings.TrimSpace(hexOf(id[:]))) }

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestJaeger exports a tape over OTLP/HTTP and over gRPC to a real Jaeger
// and reads it back through Jaeger's query API: the names, attributes,
// parentage and recorded times the converter made arrive as they were;
// the metrics arrive at the Collector inside Jaeger.
func TestJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	for _, proto := range []string{ProtocolHTTP, ProtocolGRPC} {
		t.Run(proto, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.jbx")
			writeRun(t, path, nil)
			if proto == ProtocolGRPC { // a trace of its own: another tape id
				path2 := filepath.Join(t.TempDir(), "run2.jbx")
				copyWithID(t, path, path2, [16]byte{0xab, 0xcd, 2})
				path = path2
			}
			ep := Endpoint{URL: j.OTLPHTTP, Protocol: proto}
			if proto == ProtocolGRPC {
				ep.URL = j.OTLPGRPC
			}
			sent, err := OTLP(context.Background(), []string{path}, ep, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := convert(t, path, Options{Path: path})
			if sent.Spans != int64(len(want)) || sent.Failed != 0 {
				t.Fatalf("sent %+v, want %d spans", sent, len(want))
			}
			got := traceOf(t, j, path, len(want))
			for _, w := range want {
				g, ok := got[w.id.String()]
				if !ok {
					t.Errorf("span %s (%s) not in Jaeger", w.name, w.id)
					continue
				}
				parent := ""
				if w.parent.IsValid() {
					parent = w.parent.String()
				}
				if g.Name != w.name || g.Parent() != parent || g.Start != w.start.UnixMicro() || g.Duration != w.end.Sub(w.start).Microseconds() {
					t.Errorf("span %s: Jaeger has %q parent %q at %d for %d µs; want %q parent %q at %d for %d µs",
						w.id, g.Name, g.Parent(), g.Start, g.Duration, w.name, parent, w.start.UnixMicro(), w.end.Sub(w.start).Microseconds())
				}
				for k, v := range attrs(w) {
					if gv := g.Tag(k); gv != v && !(strings.HasPrefix(v, "[") && gv == v) {
						t.Errorf("span %s: %s = %q in Jaeger, want %q", w.name, k, gv, v)
					}
				}
				if w.err != "" && g.Tag("otel.status_code") != "ERROR" {
					t.Errorf("span %s: status %q, want ERROR", w.name, g.Tag("otel.status_code"))
				}
			}
			if !slices.Contains(j.Services(t), "support-bot") {
				t.Errorf("services %q: no support-bot", j.Services(t))
			}
		})
	}
	m := j.Metrics(t)
	for _, want := range []string{
		`gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="anthropic",gen_ai_request_model="claude-sonnet-4-5",gen_ai_response_model="claude-sonnet-4-5",gen_ai_token_type="input"`,
		`gen_ai_client_operation_duration_seconds_count{error_type="429",gen_ai_operation_name="chat",gen_ai_provider_name="openai"`,
		`gen_ai_client_operation_time_to_first_chunk_seconds_count{gen_ai_operation_name="chat",gen_ai_provider_name="anthropic"`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// copyWithID writes src's frames and blobs to dst under another tape id.
func copyWithID(t *testing.T, src, dst string, id [16]byte) {
	t.Helper()
	in, err := tapefmt.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := tapefmt.Create(dst, tapefmt.Options{Created: in.Created(), ID: id})
	if err != nil {
		t.Fatal(err)
	}
	for f, err := range in.All() {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		for _, h := range tapefmt.BlobRefs(p) {
			if b, err := in.Blob(h); err == nil {
				out.PutBlob("copy", b)
			}
		}
		if _, err := out.AppendFrame(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLiveMatchesExport: a tape exported live, as it is written, reaches
// Jaeger span for span as the export of the finished tape does (same
// ids, names, parents and times), and loses nothing.
func TestLiveMatchesExport(t *testing.T) {
	j := jaegertest.Start(t)
	l, err := NewLive(context.Background(), Endpoint{URL: j.OTLPHTTP, Protocol: ProtocolHTTP}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "live.jbx")
	writeRun(t, path, liveUntilEnd{l})
	want, _ := convert(t, path, Options{})
	got := traceOf(t, j, path, len(want))
	for _, w := range want {
		g := got[w.id.String()]
		if g.Name != w.name || g.Start != w.start.UnixMicro() || g.Duration != w.end.Sub(w.start).Microseconds() {
			t.Errorf("live span %s: %q at %d for %d µs, the export has %q at %d for %d µs", w.id, g.Name, g.Start, g.Duration,
				w.name, w.start.UnixMicro(), w.end.Sub(w.start).Microseconds())
		}
		// The same attributes: a receiver that drops identical copies
		// keeps one of a live span sent again by an export.
		for k, v := range attrs(w) {
			if gv := g.Tag(k); gv != v && !(strings.HasPrefix(v, "[") && gv == v) {
				t.Errorf("live span %s: %s = %q, the export has %q", w.name, k, gv, v)
			}
		}
		want := attrs(w)
		for _, kv := range g.Tags {
			switch kv.Key {
			case "otel.scope.name", "otel.scope.version", "span.kind", "otel.status_code", "otel.status_description", "error":
				continue // Jaeger's own
			}
			if _, ok := want[kv.Key]; !ok {
				t.Errorf("live span %s: %s, which the export has not", w.name, kv.Key)
			}
		}
	}
}

// liveUntilEnd is a Live that is finished when the run.end frame comes,
// as the engine finishes it before it writes run.end.
type liveUntilEnd struct{ *Live }

func (l liveUntilEnd) ObserveFrame(f tapefmt.Frame) {
	if f.Kind == tapefmt.KindRunEnd {
		p, _ := f.Decode()
		if lost, err := l.Finish(*p.(*tapefmt.RunEnd), f.Time); lost != 0 || err != "" {
			panic("live export lost " + err)
		}
		return
	}
	l.Live.ObserveFrame(f)
}

// TestLiveReceiverDown: with nothing listening, or a receiver that never
// answers, a live export neither fails nor holds up the writer: Finish
// returns within its grace and says how many spans were lost and why.
func TestLiveReceiverDown(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	go func() { // accepts, reads, never answers
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + closed.Addr().String()
	closed.Close()
	for name, url := range map[string]string{"down": down, "hung": "http://" + hung.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			l, err := NewLive(context.Background(), Endpoint{URL: url, Protocol: ProtocolHTTP}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "run.jbx")
			var lost int64
			var why string
			writeRun(t, path, finishOnEnd{l, &lost, &why})
			if lost == 0 || why == "" {
				t.Errorf("lost %d spans (%q), want some, and why", lost, why)
			}
			done := make(chan struct{})
			go func() { l.Finish(tapefmt.RunEnd{}, -1); close(done) }() // a second Finish says the same at once
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("a second Finish hangs")
			}
		})
	}
}

// finishOnEnd finishes a Live at run.end and keeps what it said.
type finishOnEnd struct {
	*Live
	lost *int64
	why  *string
}

func (l finishOnEnd) ObserveFrame(f tapefmt.Frame) {
	if f.Kind == tapefmt.KindRunEnd {
		*l.lost, *l.why = l.Finish(tapefmt.RunEnd{ExitCode: 3}, -1)
		return
	}
	l.Live.ObserveFrame(f)
}
