package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jukebox-os/jukebox/internal/jaegertest"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// agentRunTape is the bundled sample tape.
const agentRunTape = "../../testdata/tapes/agent-run.jbx"

// tapeFacts are what a recorded tape says of itself: its id (the trace
// id) and its model requests.
func tapeFacts(t *testing.T, path string) (id string, requests []uint64, end *tapefmt.RunEnd) {
	t.Helper()
	tp := openTape(t, path)
	defer tp.Close()
	for f, err := range tp.All() {
		must(t, err)
		p, err := f.Decode()
		must(t, err)
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			requests = append(requests, f.Seq)
		case *tapefmt.RunEnd:
			end = p
		}
	}
	return fmt.Sprintf("%x", tp.ID()), requests, end
}

// TestRecordExportsLive: two recorders running at once, each an official
// openai SDK agent, export live to one Jaeger; both runs' traces arrive,
// apart (each span names its own tape) and complete (a span for every
// model request, the run's span with the agent's exit status), and
// neither tape counts a lost span.
func TestRecordExportsLive(t *testing.T) {
	agents := testenv.RequireNode(t)
	j := jaegertest.Start(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := jukeboxCmd(context.Background(), dir, "record", "--name", fmt.Sprintf("agent-%d", i), "--otlp-endpoint", j.OTLPHTTP,
				"--upstream", "openai="+srv.OpenAIBaseURL(), "-o", fmt.Sprintf("run%d.jbx", i), "--", "node", filepath.Join(agents, "openai_agent.mjs"))
			cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-test")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Sprintf("recorder %d: %v\n%s", i, err, stderr.String())
				return
			}
			errs[i] = stderr.String()
		}()
	}
	wg.Wait()
	for i := range 2 {
		id, requests, end := tapeFacts(t, filepath.Join(dir, fmt.Sprintf("run%d.jbx", i)))
		if !strings.Contains(errs[i], "exported live to "+j.OTLPHTTP+": trace "+id) {
			t.Fatalf("recorder %d said:\n%s", i, errs[i])
		}
		if end == nil || end.ExportLost != 0 || end.ExportError != "" {
			t.Errorf("run %d: run.end %+v", i, end)
		}
		tr := j.WaitTrace(t, id, len(requests)+1)
		byID := map[string]jaegertest.Span{}
		for _, s := range tr.Spans {
			byID[s.ID] = s
			if s.Tag("jukebox.tape.id") != id {
				t.Errorf("run %d: span %s %q names tape %q", i, s.ID, s.Name, s.Tag("jukebox.tape.id"))
			}
		}
		root, ok := byID["0000000000000001"]
		if !ok || root.Name != fmt.Sprintf("invoke_agent agent-%d", i) || root.Tag("process.exit.code") != "0" {
			t.Errorf("run %d: the run's span %+v", i, root)
		}
		if svc := tr.Processes[root.Process].Service; svc != fmt.Sprintf("agent-%d", i) {
			t.Errorf("run %d: service %q", i, svc)
		}
		for _, seq := range requests {
			s, ok := byID[fmt.Sprintf("%016x", seq+1)]
			if !ok || s.Parent() != root.ID || s.Tag("jukebox.frame") != fmt.Sprint(seq) {
				t.Errorf("run %d: no span for the request at frame %d (or not under the run): %+v", i, seq, s)
			}
		}
	}
}

// TestRecordExportReceiverDown: a receiver that is down does not fail or
// stop the run: the agent's exit status stands, run.end counts the spans
// lost and says why, and jukebox says how to send them again (to the
// same endpoint).
func TestRecordExportReceiverDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	down := "http://" + l.Addr().String()
	l.Close()
	dir := t.TempDir()
	tape := filepath.Join(dir, "down.jbx")
	_, errs := wantCode(t, 3, "record", "--otlp-endpoint", down, "-o", tape, "--", "sh", "-c", "echo hi; exit 3")
	_, _, end := tapeFacts(t, tape)
	if end == nil || end.ExitCode != 3 || end.ExportLost == 0 || !strings.Contains(end.ExportError, "connection refused") {
		t.Errorf("run.end %+v", end)
	}
	// The command to send them names the endpoint (it said "--endpoint
	// URL", literally).
	if !strings.Contains(errs, "the live export to "+down+" lost") || !strings.Contains(errs, "jukebox export otlp "+tape+" --endpoint "+down+"`") {
		t.Errorf("stderr:\n%s", errs)
	}
}

// TestExportFlags: an endpoint, protocol or header that makes no sense is
// exit 2 before anything runs or is sent, naming the flag.
func TestExportFlags(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	ran := filepath.Join(dir, "ran")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--otlp-endpoint", "ftp://x", "--", "touch", ran}, "--otlp-endpoint: \"ftp://x\" is not an http:// or https:// URL"},
		{[]string{"record", "--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-protocol", "thrift", "--", "touch", ran}, "--otlp-protocol: protocol \"thrift\""},
		{[]string{"record", "--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-headers", "novalue", "--", "touch", ran}, "--otlp-headers: header \"novalue\": want name=value"},
		{[]string{"record", "--otlp-protocol", "grpc", "--", "touch", ran}, "need --otlp-endpoint"},
		{[]string{"export", "otlp", agentRunTape}, "no receiver: give --endpoint URL"},
		{[]string{"export", "otlp", agentRunTape, "--endpoint", "127.0.0.1:4318"}, "--endpoint: \"127.0.0.1:4318\""},
		// A store where a tape is wanted: exit 3 and "do not read whole"
		// after trying to send, before.
		{[]string{"export", "otlp", "file://" + dir + "/", "--endpoint", "http://127.0.0.1:4318"}, "jukebox: tape file://" + dir + "/ names a store, not a tape"},
	} {
		_, errs := wantCode(t, ExitUsage, c.args...)
		if !strings.Contains(errs, c.want) {
			t.Errorf("%q: stderr %q, want %q", c.args, errs, c.want)
		}
		if _, err := os.Stat(ran); err == nil {
			t.Fatalf("%q ran the agent", c.args)
		}
	}
	// OTEL_EXPORTER_OTLP_PROTOCOL is read, and checked, like the flag.
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, errs := wantCode(t, ExitUsage, "export", "otlp", agentRunTape, "--endpoint", "http://127.0.0.1:4318")
	if !strings.Contains(errs, "http/json") {
		t.Errorf("stderr %q", errs)
	}
}

// TestExportOTLPToJaeger: export otlp of tapes and a folder reaches Jaeger
// and reports each tape's trace; --json says the same.
func TestExportOTLPToJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	doc := jsonDoc(t)
	// A copy: export otlp notes beside a tape what it sent (otlp.json).
	tape := filepath.Join(t.TempDir(), "agent-run.jbx")
	b, err := os.ReadFile(agentRunTape)
	must(t, err)
	must(t, os.WriteFile(tape, b, 0o644))
	out, _ := wantCode(t, ExitOK, "export", "otlp", "--json", "--endpoint", j.OTLPGRPC, "--protocol", "grpc", tape)
	checkShape(t, doc, "export otlp", out, map[string]map[string]bool{})
	var rep struct {
		Tapes []struct {
			TraceID string `json:"trace_id"`
			Spans   int    `json:"spans"`
		} `json:"tapes"`
		Sent int64 `json:"spans_sent"`
	}
	must(t, json.Unmarshal([]byte(out), &rep))
	if len(rep.Tapes) != 1 || rep.Sent != int64(rep.Tapes[0].Spans) {
		t.Fatalf("--json: %s", out)
	}
	tr := j.WaitTrace(t, rep.Tapes[0].TraceID, rep.Tapes[0].Spans)
	if len(tr.Spans) != rep.Tapes[0].Spans {
		t.Errorf("Jaeger has %d spans, export said %d", len(tr.Spans), rep.Tapes[0].Spans)
	}
	// A tape that is not a tape is an error that names it; nothing half sent hides it.
	bad := filepath.Join(t.TempDir(), "bad.jbx")
	must(t, os.WriteFile(bad, []byte("not a tape"), 0o644))
	_, errs := wantCode(t, ExitBadTape, "export", "otlp", "--endpoint", j.OTLPHTTP, bad)
	if !strings.Contains(errs, bad) {
		t.Errorf("stderr %q", errs)
	}
	// A folder where a file that is no tape and a tampered tape come
	// first: it stopped at the first (nothing sent), or sent the spans of
	// the tampered one before its damage. Both are left out, named, and
	// the good one goes (exit 3).
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "a.jbx"), []byte("not a tape"), 0o644))
	tampered, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tapes", "tampered.jbx"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "b.jbx"), tampered, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "c.jbx"), b, 0o644))
	out, errs = wantCode(t, ExitBadTape, "export", "otlp", "--all", "--json", "--endpoint", j.OTLPHTTP, dir)
	checkShape(t, doc, "export otlp", out, map[string]map[string]bool{})
	var folder struct {
		Tapes []struct {
			Path  string `json:"path"`
			Spans int    `json:"spans"`
		} `json:"tapes"`
		Unread []struct{ Path string } `json:"unread"`
		Sent   int64                   `json:"spans_sent"`
	}
	must(t, json.Unmarshal([]byte(out), &folder))
	if len(folder.Tapes) != 1 || filepath.Base(folder.Tapes[0].Path) != "c.jbx" || len(folder.Unread) != 2 || folder.Sent != int64(folder.Tapes[0].Spans) {
		t.Errorf("a folder with two bad tapes before a good one: %s\n%s", out, errs)
	}
}

// TestExportOTLPToATracesOnlyReceiver: Jaeger as it ships takes traces
// and has no /v1/metrics (404): export otlp to it sent the traces and
// then failed (exit 1) on the metrics. A receiver that takes no metrics
// is now said so once, in a note and in --json, and the export passes;
// a receiver that refuses the traces still fails it.
func TestExportOTLPToATracesOnlyReceiver(t *testing.T) {
	var traces, metrics atomic.Int32
	refuseTraces := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/v1/traces" && !refuseTraces.Load():
			traces.Add(1)
			w.Header().Set("Content-Type", "application/x-protobuf")
		case r.URL.Path == "/v1/metrics":
			metrics.Add(1)
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	var tapes []string
	for i := range 2 {
		b, err := os.ReadFile(agentRunTape)
		must(t, err)
		tapes = append(tapes, filepath.Join(dir, fmt.Sprintf("run%d.jbx", i)))
		must(t, os.WriteFile(tapes[i], b, 0o644))
	}
	_, errs := wantCode(t, ExitOK, append([]string{"export", "otlp", "--all", "--endpoint", srv.URL}, tapes...)...)
	if traces.Load() == 0 || strings.Count(errs, "the receiver takes no metrics") != 1 || !strings.Contains(errs, "404 Not Found") {
		t.Fatalf("%d trace requests; stderr:\n%s", traces.Load(), errs)
	}
	out, _ := wantCode(t, ExitOK, "export", "otlp", "--all", "--json", "--endpoint", srv.URL, tapes[0])
	if !strings.Contains(out, `"metrics_not_taken": "`+srv.URL+`/v1/metrics: 404 Not Found`) {
		t.Errorf("--json does not say the receiver took no metrics:\n%s", out)
	}
	refuseTraces.Store(true)
	wantCode(t, ExitInternal, "export", "otlp", "--all", "--endpoint", srv.URL, tapes[0])
}

// TestExportHARAndJSONFiles: har and json write to stdout or to a new
// file, never over an existing one.
func TestExportHARAndJSONFiles(t *testing.T) {
	dir := t.TempDir()
	out, _ := wantCode(t, ExitOK, "export", "har", agentRunTape)
	var har struct {
		Log struct {
			Entries []struct {
				Request struct{ URL string } `json:"request"`
			} `json:"entries"`
		} `json:"log"`
	}
	must(t, json.Unmarshal([]byte(out), &har))
	_, requests, _ := tapeFacts(t, agentRunTape)
	if len(har.Log.Entries) != len(requests) {
		t.Errorf("%d HAR entries, %d requests on the tape", len(har.Log.Entries), len(requests))
	}
	file := filepath.Join(dir, "out", "run.json") // its folder is made
	wantCode(t, ExitOK, "export", "json", agentRunTape, "-o", file)
	data, err := os.ReadFile(file)
	must(t, err)
	if !json.Valid(data) {
		t.Fatalf("export json wrote no JSON")
	}
	_, errs := wantCode(t, ExitInternal, "export", "json", agentRunTape, "-o", file)
	if !strings.Contains(errs, "file exists") {
		t.Errorf("over an existing file: %q", errs)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, data) {
		t.Error("the existing file changed")
	}
}
