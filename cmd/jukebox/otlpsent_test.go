package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/jaegertest"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestExportResendNotDuplicated: a run exported live with nothing lost is
// not sent again by export otlp, nor a tape export otlp sent whole
// before, to the same receiver (many keep every copy of a span); --all
// sends it again, and the copies it sends are the live export's exactly
// (times and attributes), so a receiver that keeps one of identical
// copies (Jaeger) shows no duplicate. Red before: the live export ended
// the run's span before run.end's time and lost the counted usage of an
// answer that reported none, so Jaeger held 17 spans for 14.
func TestExportResendNotDuplicated(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	j := jaegertest.Start(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	record := func(name string, live bool) string {
		args := []string{"record", "--name", name, "--upstream", "openai=" + srv.OpenAIBaseURL(), "-o", name + ".jbx"}
		if live {
			args = append(args, "--otlp-endpoint", j.OTLPHTTP)
		}
		cmd := jukeboxCmd(context.Background(), dir, append(args, "--", "node", filepath.Join(agents, "openai_agent.mjs"))...)
		cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-test", "OTEL_EXPORTER_OTLP_ENDPOINT=")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("record %s: %v\n%s", name, err, out)
		}
		return filepath.Join(dir, name+".jbx")
	}
	type report struct {
		Skipped []string `json:"skipped"`
		Spans   int64    `json:"spans_sent"`
	}
	export := func(tape string, more ...string) report {
		cmd := jukeboxCmd(context.Background(), dir, append([]string{"export", "otlp", tape, "--endpoint", j.OTLPHTTP, "--json"}, more...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("export otlp %s %v: %v\n%s", tape, more, err, out)
		}
		var r report
		must(t, json.Unmarshal(out, &r))
		return r
	}
	for _, live := range []bool{true, false} {
		name := map[bool]string{true: "live", false: "offline"}[live]
		tape := record(name, live)
		id, _, _ := tapeFacts(t, tape)
		if !live {
			if r := export(tape); r.Spans == 0 || len(r.Skipped) != 0 {
				t.Fatalf("%s: the first export: %+v", name, r)
			}
		}
		n := len(j.WaitTrace(t, id, 1).Spans)
		n = len(j.WaitTrace(t, id, n).Spans)
		if r := export(tape); r.Spans != 0 || len(r.Skipped) != 1 || r.Skipped[0] != tape {
			t.Errorf("%s: export again sent %d spans, skipped %q; want none sent, the tape skipped", name, r.Spans, r.Skipped)
		}
		if r := export(tape, "--all"); r.Spans != int64(n) {
			t.Errorf("%s: --all sent %d spans, want %d", name, r.Spans, n)
		}
		// Jaeger keeps one of identical copies of a span: the export's
		// copies are the live export's (or the first export's) exactly,
		// timing and attributes, or it now holds both.
		// A tape of another trace, sent after: once Jaeger has it, it has
		// what --all sent before it.
		sentinel := filepath.Join(t.TempDir(), "sentinel.jbx")
		must(t, tapefmt.CreateWith(sentinel, tapefmt.Options{}, func(w *tapefmt.Writer) error {
			w.Append(0, tapefmt.RunStart{Argv: []string{"sentinel"}})
			_, err := w.Append(0, tapefmt.RunEnd{})
			return err
		}))
		sid, _, _ := tapeFacts(t, sentinel)
		r := export(sentinel, "--all")
		j.WaitTrace(t, sid, int(r.Spans))
		tr := j.WaitTrace(t, id, n)
		if len(tr.Spans) != n {
			seen := map[string]jaegertest.Span{}
			for _, s := range tr.Spans {
				if o, ok := seen[s.ID]; ok {
					t.Errorf("%s: span %s %q differs between exports:\n%+v\n%+v", name, s.ID, s.Name, o, s)
				}
				seen[s.ID] = s
			}
			t.Errorf("%s: the receiver holds %d spans after --all, want %d", name, len(tr.Spans), n)
		}
		b, err := os.ReadFile(filepath.Join(sidecar.Dir(tape), "otlp.json"))
		if err != nil || !strings.Contains(string(b), j.OTLPHTTP) {
			t.Errorf("%s: the sidecar's record: %q, %v", name, b, err)
		}
	}
}
