// Command replay measures offline replay in process, end to end, against the
// peer issue 3 names: go-vcr v4 replaying the same interactions.
//
// The run is tapegen's 50-step streamed agent (72 chunks a step, the whole
// conversation resent every step). Jukebox writes it as a tape, opens it
// (tapefmt.Open) and builds engine.NewReplayHandler at instant speed; go-vcr
// records the same 50 exchanges into a YAML cassette with its own recorder
// (ModeRecordOnly over an in-memory upstream) and loads it in ModeReplayOnly
// with its default matcher (method, URL, headers, body, ...) and no
// simulated latency. Each repetition then sends the 50 requests through an
// http.Client (jukebox: a RoundTripper that calls the handler through an
// httptest.ResponseRecorder; go-vcr: recorder.GetDefaultClient), reads
// every body fully, and checks it against the recorded bytes after the
// clock stops. Load and serve are timed separately; medians are printed.
//
//	go -C bench run ./replay [-runs 31] [-tool-runs 11] [-agent-runs 11]
//
// With -tool-runs (default 11), tool.go also measures issue 29's figure:
// the whole agent process replayed, tool HTTP calls included, against a
// no-tape local server; with -agent-runs (default 11), client.go measures
// issue 31's: Python and Go clients replayed against a no-tape local
// server, and a short Go agent replayed by the jukebox binary against the
// same agent replaying its go-vcr cassette.
//
// Targets (issue 3): serving all 50 under 0.4 ms, and at least 50x faster
// than go-vcr serving the same 50. Issue 12: the same replay with the
// matching rules a real agent needs on (wildcard ignore paths, two scrub
// patterns; multipart comparison is always on) within 1.2x of it with the
// default rules.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/cassette"
	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/inproc"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// spec is the benchmark run named by issue 3.
var spec = tapegen.Spec{Steps: 50, Chunks: 72, Model: "gpt-4o-mini"}

// The targets of issue 3, and issue 12's for the matching rules.
const (
	targetServe = 400 * time.Microsecond
	targetRatio = 50.0
	targetRules = 1.2
)

// agentRules are the matching rules issue 12 measures: wildcard ignore
// paths and two scrub patterns (a timestamp, a uuid) over every string.
func agentRules() *reqmatch.Rules {
	r := reqmatch.Default().Merge(reqmatch.Rules{Ignore: []string{"messages.*.name", "metadata.trace_id"},
		Scrub: []reqmatch.Scrub{{Pattern: `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, With: "<time>"},
			{Pattern: `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`, With: "<uuid>"}}})
	if err := r.Compile(); err != nil {
		panic(err)
	}
	return &r
}

// URLs of the chat completions endpoint: the replay proxy's path for
// jukebox, the public API for go-vcr (what a go-vcr user records against).
const (
	jukeboxURL = "http://127.0.0.1/openai/v1/chat/completions"
	vcrURL     = "https://api.openai.com/v1/chat/completions"
)

func main() {
	if os.Getenv(agentEnv) != "" {
		os.Exit(goAgent())
	}
	runs := flag.Int("runs", 31, "repetitions per side of the in-process replay (medians are reported); 0 skips it")
	toolRuns := flag.Int("tool-runs", 11, "repetitions of the whole-process replay with tool calls (issue 29); 0 skips it")
	agentRuns := flag.Int("agent-runs", 11, "repetitions of the whole-process replays of issue 31 (Python and Go clients, go-vcr); 0 skips them")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	keep := flag.String("dir", "", "work in this folder and keep it (tapes, cassettes, agents, the jukebox binary) to look into a figure; default a temporary folder, removed")
	flag.Parse()
	if *profile != "" {
		stop, err := benchutil.StartProfile(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/replay:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(*keep, *runs, *toolRuns, *agentRuns); err != nil {
		fmt.Fprintln(os.Stderr, "bench/replay:", err)
		os.Exit(1)
	}
}

// sample is one repetition: loading, and serving all 50 requests.
type sample struct{ load, serve, native time.Duration }

func run(dir string, runs, toolRuns, agentRuns int) error {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "replay-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	if runs > 0 {
		if err := inProcessRun(dir, runs); err != nil {
			return err
		}
	}
	if toolRuns > 0 {
		if err := runTool(dir, toolRuns); err != nil {
			return err
		}
	}
	if agentRuns > 0 {
		return runClients(dir, agentRuns)
	}
	return nil
}

// inProcessRun measures issue 3's and issue 12's figures.
func inProcessRun(dir string, runs int) error {
	ins := tapegen.Interactions(spec)
	tape, err := writeTape(filepath.Join(dir, "run.jbx"))
	if err != nil {
		return err
	}
	cas := filepath.Join(dir, "run")
	if err := recordCassette(cas, ins); err != nil {
		return err
	}
	warm, cold, ruled := make([]time.Duration, 0, runs), make([]sample, 0, runs), make([]sample, 0, runs)
	vcr, floor := make([]sample, 0, runs), make([]time.Duration, 0, runs)
	jbuf, vbuf := make([]bytes.Buffer, len(ins)), make([]bytes.Buffer, len(ins))
	for i := range runs + 3 { // three warm-up rounds are dropped
		j, w, err := jukeboxRun(tape, ins, jbuf, reqmatch.Default)
		if err != nil {
			return err
		}
		r, _, err := jukeboxRun(tape, ins, jbuf, agentRules)
		if err != nil {
			return err
		}
		v, err := vcrRun(cas, ins, vbuf)
		if err != nil {
			return err
		}
		f, err := serveAll(inProcess(&cannedHandler{ins: ins}), jukeboxURL, ins, jbuf, "harness floor")
		if err != nil {
			return err
		}
		if i >= 3 {
			cold, warm, vcr, floor = append(cold, j), append(warm, w), append(vcr, v), append(floor, f)
			ruled = append(ruled, r)
		}
	}
	report(runs, cold, warm, vcr, benchutil.Median(floor))
	reportRules(cold, ruled)
	return nil
}

// reportRules prints issue 12's ratio: the replay with agentRules over the
// one with the default rules, load and serve, fresh tape.
func reportRules(off, on []sample) {
	offT := benchutil.Median(loads(off)) + benchutil.Median(serves(off))
	onT := benchutil.Median(loads(on)) + benchutil.Median(serves(on))
	fmt.Printf("\nload + serve with matching rules on (wildcard ignores, 2 scrubs): %.3f ms; default rules: %.3f ms\n",
		benchutil.MS(onT), benchutil.MS(offT))
	fmt.Printf("rules on / off: %.2fx, target <= %.1fx: %s\n", float64(onT)/float64(offT), targetRules, verdict(float64(onT)/float64(offT) <= targetRules))
}

func report(runs int, cold []sample, warm []time.Duration, vcr []sample, floor time.Duration) {
	jl, js, jw := benchutil.Median(loads(cold)), benchutil.Median(serves(cold)), benchutil.Median(warm)
	vl, vs := benchutil.Median(loads(vcr)), benchutil.Median(serves(vcr))
	fmt.Printf("replay of %d streamed steps (%d chunks each), in process, medians of %d runs\n\n", spec.Steps, spec.Chunks, runs)
	fmt.Printf("%-38s %12s %12s %10s\n", "", "jukebox", "go-vcr v4", "vcr/jbx")
	row := func(name string, j, v time.Duration) {
		fmt.Printf("%-38s %9.3f ms %9.3f ms %9.1fx\n", name, benchutil.MS(j), benchutil.MS(v), float64(v)/float64(j))
	}
	row("load (open tape+handler | cassette)", jl, vl)
	row("serve all 50 (fresh tape)", js, vs)
	row("serve all 50 (blob cache warm)", jw, vs)
	row("load + serve", jl+js, vl+vs)
	jn, vn := benchutil.Median(pick(cold, func(s sample) time.Duration { return s.native })), benchutil.Median(pick(vcr, func(s sample) time.Duration { return s.native }))
	row("serve all 50, own interface (no client)", jn, vn)
	fmt.Printf("%-38s %9.3f ms  (same client and transport, a handler that\n%-38s %s\n", "harness floor, serve all 50", benchutil.MS(floor), "",
		"reads the request and writes the recorded body: no tape, no matching)")
	fmt.Println()
	fmt.Printf("serve all 50, fresh tape: %.3f ms, target < %.1f ms: %s\n", benchutil.MS(js), benchutil.MS(targetServe), verdict(js < targetServe))
	fmt.Printf("go-vcr serve / jukebox serve: %.1fx, target >= %.0fx: %s\n", float64(vs)/float64(js), targetRatio, verdict(float64(vs)/float64(js) >= targetRatio))
	fmt.Printf("through each replayer's own interface (Handler.ServeHTTP | RoundTripper.RoundTrip): %.1fx, target >= %.0fx: %s\n",
		float64(vn)/float64(jn), targetRatio, verdict(float64(vn)/float64(jn) >= targetRatio))
	fmt.Println("every response body matched the recorded bytes on both sides")
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// writeTape writes the run as a closed tape, as the recorder would leave it.
func writeTape(path string) (string, error) {
	return path, tapegen.WriteFile(path, spec)
}

// jukeboxRun opens the tape, builds the replay handler and serves the 50
// requests twice: on the fresh tape (the end-to-end figure), then on a new
// handler over the same tape, whose decoded blobs are cached.
func jukeboxRun(path string, ins []tapegen.Interaction, got []bytes.Buffer, rules func() *reqmatch.Rules) (sample, time.Duration, error) {
	var s sample
	start := time.Now()
	t, err := tapefmt.Open(path)
	if err != nil {
		return s, 0, err
	}
	defer t.Close()
	h, err := engine.NewReplayHandler(t, rules(), 0)
	if err != nil {
		return s, 0, err
	}
	s.load = time.Since(start)
	if s.serve, err = serveAll(inProcess(h), jukeboxURL, ins, got, "jukebox"); err != nil {
		return s, 0, err
	}
	if h, err = engine.NewReplayHandler(t, rules(), 0); err != nil {
		return s, 0, err
	}
	warm, err := serveAll(inProcess(h), jukeboxURL, ins, got, "jukebox (warm)")
	if err != nil {
		return s, 0, err
	}
	if h, err = engine.NewReplayHandler(t, rules(), 0); err != nil {
		return s, 0, err
	}
	rw := &responseWriter{header: http.Header{}}
	s.native, err = serveNative(func(r *http.Request) (io.Reader, error) {
		rw.reset()
		h.ServeHTTP(rw, r)
		return &rw.body, nil
	}, jukeboxURL, ins, got, "jukebox (ServeHTTP)")
	return s, warm, err
}

// responseWriter is the least an http.Handler can be served into: one
// header map and one body buffer, reused call after call, as go-vcr hands
// out its stored body without copying.
type responseWriter struct {
	header http.Header
	body   bytes.Buffer
	status int
}

func (w *responseWriter) Header() http.Header         { return w.header }
func (w *responseWriter) Write(p []byte) (int, error) { return w.body.Write(p) }
func (w *responseWriter) WriteHeader(status int)      { w.status = status }
func (w *responseWriter) Flush()                      {}

func (w *responseWriter) reset() {
	clear(w.header)
	w.body.Reset()
	w.status = 0
}

// serveNative sends the 50 requests through a replayer's own in-process
// interface, with no http.Client in between: jukebox's http.Handler, go-vcr's
// http.RoundTripper.
func serveNative(do func(*http.Request) (io.Reader, error), url string, ins []tapegen.Interaction, got []bytes.Buffer, side string) (time.Duration, error) {
	start := time.Now()
	for i, in := range ins {
		got[i].Reset()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(in.Request))
		if err != nil {
			return 0, err
		}
		req.Header = sdkHeader()
		body, err := do(req)
		if err == nil {
			_, err = io.Copy(&got[i], body)
		}
		if c, ok := body.(io.Closer); ok {
			c.Close()
		}
		if err != nil {
			return 0, fmt.Errorf("%s: request %d: %w", side, i, err)
		}
	}
	d := time.Since(start)
	for i, in := range ins {
		if !bytes.Equal(got[i].Bytes(), in.Response) {
			return 0, fmt.Errorf("%s: response %d differs from the recorded one", side, i)
		}
	}
	return d, nil
}

// vcrRun loads the cassette and replays the 50 requests through go-vcr.
func vcrRun(name string, ins []tapegen.Interaction, got []bytes.Buffer) (sample, error) {
	var s sample
	start := time.Now()
	r, err := recorder.New(name, recorder.WithMode(recorder.ModeReplayOnly), recorder.WithSkipRequestLatency(true))
	if err != nil {
		return s, err
	}
	s.load = time.Since(start)
	if s.serve, err = serveAll(r.GetDefaultClient(), vcrURL, ins, got, "go-vcr"); err != nil {
		return s, err
	}
	if r, err = recorder.New(name, recorder.WithMode(recorder.ModeReplayOnly), recorder.WithSkipRequestLatency(true)); err != nil {
		return s, err
	}
	s.native, err = serveNative(func(req *http.Request) (io.Reader, error) {
		resp, err := r.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	}, vcrURL, ins, got, "go-vcr (RoundTrip)")
	return s, err
}

// serveAll sends every recorded request, reads every answer fully into
// got (buffers kept between runs, so reading allocates on neither side),
// and checks the answers against the recorded bodies once the clock has
// stopped.
func serveAll(c *http.Client, url string, ins []tapegen.Interaction, got []bytes.Buffer, side string) (time.Duration, error) {
	start := time.Now()
	for i, in := range ins {
		got[i].Reset()
		if err := call(c, url, in.Request, &got[i]); err != nil {
			return 0, fmt.Errorf("%s: request %d: %w", side, i, err)
		}
	}
	d := time.Since(start)
	for i, in := range ins {
		if !bytes.Equal(got[i].Bytes(), in.Response) {
			return 0, fmt.Errorf("%s: response %d differs from the recorded one (%d bytes, want %d)", side, i, got[i].Len(), len(in.Response))
		}
	}
	return d, nil
}

// call posts body to url and reads the whole answer into out.
func call(c *http.Client, url string, body []byte, out *bytes.Buffer) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = sdkHeader()
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(out, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d: %s", resp.StatusCode, out.Bytes())
	}
	return err
}

// sdkHeader is what the SDK sends, less the key (go-vcr users strip it with
// a hook; the tape writer drops it itself). Both sides get the same header.
func sdkHeader() http.Header {
	h := tapegen.Header()
	h.Del("Authorization")
	return h
}

// inProcess is a client whose transport calls h in process.
func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: &inproc.Transport{Handler: h}}
}

// cannedHandler reads each request and answers with the next recorded body:
// what the in-process client and transport cost with no replay behind them.
type cannedHandler struct {
	ins []tapegen.Interaction
	n   int
}

func (c *cannedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write(c.ins[c.n].Response)
	c.n++
}

// upstream answers go-vcr's recording with the run's responses, in order.
type upstream struct {
	ins []tapegen.Interaction
	n   int
}

func (u *upstream) RoundTrip(r *http.Request) (*http.Response, error) {
	in := u.ins[u.n]
	u.n++
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return nil, err
	}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}},
		ContentLength: -1, Body: io.NopCloser(bytes.NewReader(in.Response)), Request: r}, nil
}

// recordCassette records the 50 exchanges with go-vcr's own recorder and
// saves the cassette, so it holds exactly what go-vcr would have written.
func recordCassette(name string, ins []tapegen.Interaction) error {
	r, err := recorder.New(name, recorder.WithMode(recorder.ModeRecordOnly),
		recorder.WithRealTransport(&upstream{ins: ins}))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for i, in := range ins {
		out.Reset()
		if err := call(r.GetDefaultClient(), vcrURL, in.Request, &out); err != nil {
			return fmt.Errorf("go-vcr: recording request %d: %w", i, err)
		}
	}
	if err := r.Stop(); err != nil {
		return err
	}
	c, err := cassette.Load(name)
	if err != nil {
		return err
	}
	if len(c.Interactions) != len(ins) {
		return fmt.Errorf("go-vcr: cassette holds %d interactions, want %d", len(c.Interactions), len(ins))
	}
	return nil
}

func loads(s []sample) []time.Duration {
	return pick(s, func(x sample) time.Duration { return x.load })
}
func serves(s []sample) []time.Duration {
	return pick(s, func(x sample) time.Duration { return x.serve })
}

func pick(s []sample, f func(sample) time.Duration) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}
