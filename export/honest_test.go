package export

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// allText is every attribute, event and status of the spans, as text.
func allText(spans []*span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString(s.name + "\n" + s.err + "\n")
		for _, kv := range s.attrs {
			b.WriteString(string(kv.Key) + "=" + kv.Value.Emit() + "\n")
		}
		for _, e := range s.events {
			for _, kv := range e.attrs {
				b.WriteString(e.name + " " + string(kv.Key) + "=" + kv.Value.Emit() + "\n")
			}
		}
	}
	return b.String()
}

// TestExportsAreIdempotent (issue 35 item 5): every export of a tape sends
// the same spans, ids and attributes, whatever path it was read from: no
// span names the path or the chain head, which differ between a live
// export and an offline one, so a receiver given both keeps one.
func TestExportsAreIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jbx")
	writeRun(t, path, nil)
	a, _ := convert(t, path, Options{Path: path})
	b, _ := convert(t, path, Options{Path: "s3://bucket/other/run.jbx"})
	if allText(a) != allText(b) {
		t.Errorf("two exports of one tape differ:\n%s\n---\n%s", allText(a), allText(b))
	}
	if text := allText(a); strings.Contains(text, "jukebox.tape.path") || strings.Contains(text, "jukebox.tape.hash") || strings.Contains(text, path) {
		t.Errorf("a span names where the tape lies:\n%s", text)
	}
}

// TestNoContentWithoutIncludeContent (issue 35 item 5): with content off,
// a breaker trip's reason and a refused call's error (which quote the
// tool arguments that repeated) do not leave; the refusal is typed
// jukebox.breaker_refused, not connection; with content on they do.
func TestNoContentWithoutIncludeContent(t *testing.T) {
	const planted = "sk-PLANTED-ARGUMENT"
	path := filepath.Join(t.TempDir(), "tripped.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Name: "looper", Mode: tapefmt.ModeRecord})
		body, _ := w.PutBlob("openai /v1/chat/completions request", []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"again"}]}`))
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Body: body, Model: "gpt-4o"})
		reason := `repeated tool call write_file({"token":"` + planted + `"}) 3 times`
		w.Append(0, tapefmt.BreakerTrip{Rule: "repeat", Reason: reason})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 400, Error: llmwire.TripPrefix + ": " + reason})
		_, err := w.Append(0, tapefmt.RunEnd{ExitCode: 7})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	off, _ := convert(t, path, Options{})
	if text := allText(off); strings.Contains(text, planted) {
		t.Errorf("content off, the planted argument leaves:\n%s", text)
	}
	call := one(t, off, "chat gpt-4o")
	if a := attrs(call); a["error.type"] != "jukebox.breaker_refused" || call.err == "" {
		t.Errorf("a refused call: error.type %q, status %q", a["error.type"], call.err)
	}
	on, _ := convert(t, path, Options{IncludeContent: true})
	if text := allText(on); !strings.Contains(text, planted) {
		t.Errorf("content on, the breaker's reason is missing:\n%s", text)
	}
}

// memExporter keeps the metrics exported to it.
type memExporter struct{ got []metricdata.ResourceMetrics }

func (m *memExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}
func (m *memExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}
func (m *memExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	m.got = append(m.got, *rm)
	return nil
}
func (m *memExporter) ForceFlush(context.Context) error { return nil }
func (m *memExporter) Shutdown(context.Context) error   { return nil }

// TestRunsAreTheirOwnSeries (issue 35 item 5): the metrics of each tape
// carry its id as service.instance.id, so three runs of one agent are
// three series that a backend adds up (3 x 20 calls, not 20), and the
// resource names the run's user, commit and tags.
func TestRunsAreTheirOwnSeries(t *testing.T) {
	var instances []string
	var calls int64
	for i := range 3 {
		me := &memExporter{}
		id := [16]byte{0xab, byte(i)}
		rs := &tapefmt.RunStart{Name: "agent", Host: "ci-7", User: "ana", Git: &tapefmt.GitRef{Commit: "abc123", Branch: "main"},
			Tags: map[string]string{"team": "search"}}
		s, err := newSink(trace.TraceID(id), "agent", rs, nil, me, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			s.measure(measure{op: "chat", provider: "openai", requestModel: "gpt-4o", input: 50, output: 5, usage: true, seconds: 0.1})
		}
		if err := s.closeMetrics(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(me.got) == 0 {
			t.Fatal("no metrics exported")
		}
		res := map[string]string{}
		for _, kv := range me.got[len(me.got)-1].Resource.Attributes() {
			res[string(kv.Key)] = kv.Value.Emit()
		}
		instances = append(instances, res["service.instance.id"])
		for k, v := range map[string]string{"service.name": "agent", "host.name": "ci-7", "user.name": "ana",
			"vcs.ref.head.revision": "abc123", "vcs.ref.head.name": "main", "jukebox.tag.team": "search"} {
			if res[k] != v {
				t.Errorf("resource %s = %q, want %q", k, res[k], v)
			}
		}
		for _, sm := range me.got[len(me.got)-1].ScopeMetrics {
			for _, m := range sm.Metrics {
				if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == metricDuration {
					for _, dp := range h.DataPoints {
						calls += int64(dp.Count)
					}
				}
			}
		}
	}
	if instances[0] == "" || instances[0] == instances[1] || instances[1] == instances[2] {
		t.Errorf("service.instance.id of three runs: %q", instances)
	}
	if calls != 60 {
		t.Errorf("three runs of 20 calls counted %d calls", calls)
	}
}

var _ = json.Valid
var _ = attribute.Key("")

// TestReceiverRefusingAllSaysBoth: a receiver that took neither the
// metrics nor the spans was reported as a failure of the metrics alone
// (every span was lost too: spans_failed said so, the message did not).
func TestReceiverRefusingAllSaysBoth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest) // not tried again
	}))
	defer srv.Close()
	sent, err := OTLP(context.Background(), []string{"../testdata/tapes/agent-run.jbx"}, Endpoint{URL: srv.URL, Protocol: ProtocolHTTP}, Options{}, nil)
	if err == nil || sent.Failed == 0 || !strings.Contains(err.Error(), "spans") || !strings.Contains(err.Error(), "metrics") {
		t.Errorf("a receiver that refuses everything: %v (%d spans failed), want both named", err, sent.Failed)
	}
}

// TestMCPErrorIsContent: an MCP tool's JSON-RPC error message is the
// tool's words (it quoted the arguments it failed on): it went into the
// span's status with content off. And the result attribute, with content
// on, was the whole JSON-RPC message rather than the result.
func TestMCPErrorIsContent(t *testing.T) {
	const planted = "PLANTED-123-45-6789"
	path := filepath.Join(t.TempDir(), "mcp.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Name: "tools", Mode: tapefmt.ModeRecord})
		w.Append(0, tapefmt.MCPMessage{Server: "s", Session: 1, Direction: tapefmt.MCPToServer,
			Message: json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","arguments":{}}}`)})
		w.Append(0, tapefmt.MCPMessage{Server: "s", Session: 1, Direction: tapefmt.MCPFromServer,
			Message: json.RawMessage(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"tool exploded on {\"ssn\": \"` + planted + `\"}"}}`)})
		w.Append(0, tapefmt.MCPMessage{Server: "s", Session: 1, Direction: tapefmt.MCPToServer,
			Message: json.RawMessage(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)})
		w.Append(0, tapefmt.MCPMessage{Server: "s", Session: 1, Direction: tapefmt.MCPFromServer,
			Message: json.RawMessage(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"hi"}]}}`)})
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	off, _ := convert(t, path, Options{})
	if text := allText(off); strings.Contains(text, planted) {
		t.Errorf("content off, the tool's error message leaves:\n%s", text)
	}
	on, _ := convert(t, path, Options{IncludeContent: true})
	if text := allText(on); !strings.Contains(text, planted) {
		t.Errorf("content on, the tool's error message is missing:\n%s", text)
	}
	for _, s := range on {
		if r, ok := attrs(s)["gen_ai.tool.call.result"]; ok && strings.Contains(r, "jsonrpc") {
			t.Errorf("the tool's result attribute holds the JSON-RPC message: %s", r)
		}
	}
}
