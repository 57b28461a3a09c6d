package engine

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// BenchmarkGuardStreamedAnswer measures what the circuit breaker costs a
// streamed answer of 72 chunks (the replay benchmark's step), with every
// rule on: it reports ns/chunk against issue 13's target of 5 µs a chunk.
func BenchmarkGuardStreamedAnswer(b *testing.B) {
	const chunks = 72
	var body strings.Builder
	for i := range chunks - 2 {
		fmt.Fprintf(&body, "data: {\"model\":\"demo-large\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word%d \"}}]}\n\n", i)
	}
	body.WriteString("data: {\"model\":\"demo-large\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\\\"a.txt\\\"}\"}}]}}]}\n\n")
	body.WriteString("data: {\"model\":\"demo-large\",\"choices\":[],\"usage\":{\"prompt_tokens\":900,\"completion_tokens\":80}}\n\ndata: [DONE]\n\n")
	raw := []byte(body.String())
	req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	reqBody := []byte(`{"model":"demo-large","stream":true,"messages":[{"role":"user","content":"go on"},{"role":"tool","tool_call_id":"call_0","content":"ok"}]}`)
	g := newGuard(breaker.Limits{MaxCost: 1e9, MaxTokensPerMin: 1e12, MaxRepeat: 1 << 30, MaxSemanticRepeat: 1 << 30},
		func(*breaker.Trip) {}, func() {})
	a := answer{body: raw, resp: tapefmt.LLMResponse{Model: "demo-large", Usage: tapefmt.Usage{Input: 900, Output: 80}}}
	w := httptest.NewRecorder()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		x := &exchange{req: req, path: "/v1/chat/completions", body: reqBody}
		if _, refused := g.before(w, x, uint64(2*i), ""); refused {
			b.Fatal("tripped")
		}
		g.after(x, a, uint64(2*i+1), "", nil) // the answer counted here, as without a tape
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
}

// BenchmarkTripToExit measures how long an agent that ignores the
// breaker's refusal (it sleeps on) takes to be stopped after the trip,
// from the breaker.trip frame to run.end by the tape's clock: the target
// is 100 ms past the grace period (tripGrace) it is given to exit by
// itself. Each iteration takes tripGrace; run it with -benchtime 1x.
func BenchmarkTripToExit(b *testing.B) {
	py := testenv.RequirePython(b)
	agent := `import os, time, urllib.request, urllib.error
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=b'{"model":"no-price-model","messages":[]}',
    headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
try:
    urllib.request.urlopen(req)
except urllib.error.HTTPError:
    pass
time.sleep(600)`
	var past time.Duration
	for range b.N {
		tape := filepath.Join(b.TempDir(), "trip.jbx")
		res, err := Record(context.Background(), RecordOptions{
			RunOptions: RunOptions{Argv: []string{py, "-c", agent}, Dir: b.TempDir(), Env: os.Environ(), Stdout: io.Discard, Stderr: io.Discard,
				Limits: breaker.Limits{MaxCost: 1}},
			Tape: tape, Upstreams: map[string]string{"openai": "http://127.0.0.1:9/v1"}})
		if err != nil || res.Breaker == nil {
			b.Fatalf("%v, %+v", err, res)
		}
		// From the breaker.trip frame to run.end, by the tape's clock.
		t, err := tapefmt.Open(tape)
		if err != nil {
			b.Fatal(err)
		}
		var trip, end time.Duration
		for f, err := range t.Frames(tapefmt.KindBreakerTrip, tapefmt.KindRunEnd) {
			if err != nil {
				b.Fatal(err)
			}
			if f.Kind == tapefmt.KindBreakerTrip {
				trip = f.Time
			} else {
				end = f.Time
			}
		}
		t.Close()
		past += end - trip - tripGrace
	}
	b.ReportMetric(float64(past.Milliseconds())/float64(b.N), "ms-past-grace")
}
