// Command proxy measures what the recording proxy costs an agent, against
// the peer issue 3 names: the same calls made directly to the same server.
//
// The upstream is llmsim on 127.0.0.1 with no pacing. The program records
// itself: it runs a copy of itself under engine.Record (the only way to
// reach the recording proxy), and that child, with OPENAI_BASE_URL pointing
// at the proxy, makes every call twice, alternately direct and through the
// proxy, over one keep-alive client:
//
//   - non-streamed chat completions: latency median and p90, and the median
//     overhead (target: under 0.5 ms);
//   - streamed chat completions: time to the first SSE event (target: within
//     1 ms of direct);
//   - one long stream of one-rune chunks with no delays: SSE events received
//     per second (target: at least 50,000 through the proxy).
//
// The child writes its samples as JSON to a file the parent reads; the
// parent prints the table. Each sync policy given with -sync (the tape's
// fsync policy; the CLI default is "step") is a separate recorded run.
//
// With -otlp, it measures instead what a live OpenTelemetry export adds to
// the proxy's per-call overhead (target: under 5%): -rounds recorded runs
// with the export off and as many with it on, interleaved (off, on, on,
// off, ...), each run's median overhead taken, and the medians of those
// compared. The receiver is a real Jaeger (JUKEBOX_JAEGER, from
// .ci/jaeger.sh) started on free ports, or the OTLP/HTTP URL given.
//
//	go -C bench run ./proxy [-calls 300] [-ttfc 200] [-chunks 50000] [-streams 5] [-sync step,never]
//	go -C bench run ./proxy -otlp jaeger [-rounds 6] [-calls 300]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/export"
	"github.com/jukebox-os/jukebox/internal/jaegertest"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Environment of the child run.
const (
	envOut    = "JUKEBOX_BENCH_PROXY_OUT"    // file the child writes its samples to; set only in the child
	envDirect = "JUKEBOX_BENCH_PROXY_DIRECT" // llmsim's OpenAI base URL
	envParams = "JUKEBOX_BENCH_PROXY_PARAMS" // the parameters, as JSON
)

// The targets of issue 3.
const (
	targetOverhead = 500 * time.Microsecond
	targetTTFC     = time.Millisecond
	targetRate     = 50000.0
)

// params say how much the child measures.
type params struct {
	Calls   int `json:"calls"`   // non-streamed calls per side
	TTFC    int `json:"ttfc"`    // streamed calls per side for time to first chunk
	Chunks  int `json:"chunks"`  // runes (one chunk each) in the long stream
	Streams int `json:"streams"` // long streams per side
	Steps   int `json:"steps"`   // with -steps: the realistic run's steps, and only that is measured
	Rounds  int `json:"rounds"`  // with -steps: passes over the run
}

// samples are what the child measured, in nanoseconds and events per second.
type samples struct {
	CallDirect, CallProxy   []int64
	TTFCDirect, TTFCProxy   []int64
	RateDirect, RateProxy   []float64
	Events                  int // SSE events in one long stream
	StepsDirect, StepsProxy []int64
}

func main() {
	if raw := os.Getenv(envHTTPS); raw != "" {
		if err := httpsChild(raw); err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy https child:", err)
			os.Exit(1)
		}
		return
	}
	if out := os.Getenv(envOut); out != "" {
		if err := child(out); err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy child:", err)
			os.Exit(1)
		}
		return
	}
	var p params
	flag.IntVar(&p.Calls, "calls", 300, "non-streamed calls per side")
	flag.IntVar(&p.TTFC, "ttfc", 200, "streamed calls per side for time to first chunk")
	flag.IntVar(&p.Chunks, "chunks", 50000, "one-rune chunks in the long stream")
	flag.IntVar(&p.Streams, "streams", 5, "long streams per side")
	syncs := flag.String("sync", "step,never", "tape fsync policies to run, comma-separated (step is the CLI default)")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the parent (proxy and upstream) to this file")
	otlp := flag.String("otlp", "", "measure a live OpenTelemetry export's cost instead: 'jaeger' (start $JUKEBOX_JAEGER) or an OTLP/HTTP base URL")
	rounds := flag.Int("rounds", 6, "with -otlp: recorded runs per side, interleaved; with -steps: passes over the run")
	steps := flag.Bool("steps", false, "measure the realistic 50-step streamed run instead (-rounds passes, -sync policies)")
	wait := flag.Duration("upstream-wait", 0, "with -steps: the upstream waits this long before each answer, as a model does before its first token (the target is for 0)")
	https := flag.Int("https", 0, "measure HTTPS through the forward proxy instead: this many first requests to new hosts per side (-calls warm requests, -ttfc streams)")
	flag.Parse()
	if *https > 0 {
		if err := httpsBench(p.Calls, p.TTFC, *https); err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy:", err)
			os.Exit(1)
		}
		return
	}
	if min(p.Calls, p.TTFC, p.Chunks, p.Streams) < 1 {
		fmt.Fprintln(os.Stderr, "bench/proxy: -calls, -ttfc, -chunks and -streams must be at least 1")
		os.Exit(2)
	}
	if *profile != "" {
		stop, err := benchutil.StartProfile(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if *steps {
		if err := stepsBench(p, *rounds, strings.Split(*syncs, ","), *wait); err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy:", err)
			os.Exit(1)
		}
		return
	}
	if *otlp != "" {
		if err := exportCost(p, *otlp, *rounds); err != nil {
			fmt.Fprintln(os.Stderr, "bench/proxy:", err)
			os.Exit(1)
		}
		return
	}
	if err := parent(p, strings.Split(*syncs, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "bench/proxy:", err)
		os.Exit(1)
	}
}

func parent(p params, syncs []string) error {
	script, err := benchScript(p.Chunks)
	if err != nil {
		return err
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Printf("recording proxy vs direct, same llmsim upstream on loopback, no pacing\n")
	fmt.Printf("%d non-streamed and %d streamed calls per side, %d streams of %d one-rune chunks per side\n",
		p.Calls, p.TTFC, p.Streams, p.Chunks)
	for _, name := range syncs {
		policy, ok := policies[name]
		if !ok {
			return fmt.Errorf("-sync %q: want step, never or frame", name)
		}
		s, _, err := record(srv.OpenAIBaseURL(), p, policy, "")
		if err != nil {
			return fmt.Errorf("sync=%s: %w", name, err)
		}
		report(name, s)
	}
	return nil
}

var policies = map[string]tapefmt.SyncPolicy{"step": tapefmt.SyncStep, "never": tapefmt.SyncNever, "frame": tapefmt.SyncFrame}

// benchScript answers every chat request with a short sentence, unpaced,
// except "bench-long", which gets n runes, one a chunk.
func benchScript(n int) (*llmsim.Script, error) {
	long := strings.Repeat("abcdefghij", n/10+1)[:n]
	s := map[string]any{
		"version":  1,
		"defaults": map[string]int{"chunk_size": 6, "delay_ms": 0, "first_delay_ms": 0},
		"rules": []any{
			map[string]any{"name": "long", "match": map[string]any{"api": "chat", "user": "^bench-long$"},
				"reply": map[string]any{"text": long}, "chunk_size": 1},
			map[string]any{"name": "short", "match": map[string]any{"api": "chat"},
				"reply": map[string]any{"text": "The config loader now reads defaults first, then the file, then the environment."}},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return llmsim.ParseScript(b)
}

// record runs this program as the child under engine.Record and returns
// the samples it wrote, exporting the run live to otlp when it is set.
func record(direct string, p params, policy tapefmt.SyncPolicy, otlp string) (*samples, *engine.Result, error) {
	dir, err := os.MkdirTemp("", "proxy-bench-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, nil, err
	}
	out := filepath.Join(dir, "samples.json")
	env := append(os.Environ(), envOut+"="+out, envDirect+"="+direct, envParams+"="+string(pj))
	o := engine.RunOptions{Argv: []string{exe}, Env: env, Stdout: os.Stdout, Stderr: os.Stderr, Name: "bench-proxy"}
	if otlp != "" {
		l, err := export.NewLive(context.Background(), export.Endpoint{URL: otlp, Protocol: export.ProtocolHTTP}, export.Options{})
		if err != nil {
			return nil, nil, err
		}
		o.Telemetry = l
	}
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: o, Tape: filepath.Join(dir, "run.jbx"), Upstreams: map[string]string{"openai": direct}, Sync: policy,
	})
	if err != nil {
		return nil, nil, err
	}
	if res.End.ExitCode != 0 {
		return nil, nil, fmt.Errorf("child exited with %d", res.End.ExitCode)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, nil, err
	}
	var s samples
	return &s, res, json.Unmarshal(b, &s)
}

// The target of the export issue: a live export adds under 5% to the
// proxy's per-call overhead.
const targetExportShare = 0.05

// exportCost records rounds runs with a live export and rounds without,
// interleaved, and compares their median per-call overheads.
func exportCost(p params, otlp string, rounds int) error {
	if otlp == "jaeger" {
		bin := os.Getenv("JUKEBOX_JAEGER")
		if bin == "" {
			return errors.New(`-otlp jaeger needs JUKEBOX_JAEGER: run eval "$(bash .ci/jaeger.sh)" from the repository's root`)
		}
		j, stop, err := jaegertest.Run(bin, filepath.Join("..", "export", "testdata", "jaeger.yaml"))
		if err != nil {
			return err
		}
		defer stop()
		otlp = j.OTLPHTTP
	}
	script, err := benchScript(p.Chunks)
	if err != nil {
		return err
	}
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	if err != nil {
		return err
	}
	defer srv.Close()
	p.Chunks, p.Streams, p.TTFC = 10, 1, 1 // the non-streamed calls are what is compared
	fmt.Printf("live OpenTelemetry export to %s: its cost on the recording proxy's per-call overhead\n", otlp)
	fmt.Printf("%d recorded runs a side, interleaved; %d non-streamed calls a run (direct and proxied alternately)\n", rounds, p.Calls)
	var off, on []int64
	var lost int64
	for i := range 2 * rounds {
		export := i%4 == 1 || i%4 == 2 // off, on, on, off, ...
		url := ""
		if export {
			url = otlp
		}
		s, res, err := record(srv.OpenAIBaseURL(), p, tapefmt.SyncStep, url)
		if err != nil {
			return err
		}
		over := medianD(s.CallProxy) - medianD(s.CallDirect)
		if export {
			on, lost = append(on, int64(over)), lost+res.ExportLost
		} else {
			off = append(off, int64(over))
		}
	}
	mOff, mOn := medianD(off), medianD(on)
	share := float64(mOn-mOff) / float64(mOff)
	fmt.Printf("%-40s %9.3f ms\n", "per-call overhead, export off (median)", benchutil.MS(mOff))
	fmt.Printf("%-40s %9.3f ms\n", "per-call overhead, export on (median)", benchutil.MS(mOn))
	fmt.Printf("export adds %+.1f%% to the overhead (on/off %.3fx), target < %.0f%%: %s; spans lost: %d\n",
		100*share, float64(mOn)/float64(mOff), 100*targetExportShare, verdict(share < targetExportShare), lost)
	return nil
}

func report(policy string, s *samples) {
	fmt.Printf("\ntape fsync policy: %s\n", policy)
	fmt.Printf("%-34s %11s %11s %11s %9s\n", "", "direct", "proxy", "overhead", "px/direct")
	line := func(name string, d, p time.Duration) {
		fmt.Printf("%-34s %8.3f ms %8.3f ms %8.3f ms %8.2fx\n", name, benchutil.MS(d), benchutil.MS(p), benchutil.MS(p-d), float64(p)/float64(d))
	}
	cd, cp := medianD(s.CallDirect), medianD(s.CallProxy)
	line("non-streamed call, median", cd, cp)
	line("non-streamed call, p90", quantileD(s.CallDirect, 0.9), quantileD(s.CallProxy, 0.9))
	td, tp := medianD(s.TTFCDirect), medianD(s.TTFCProxy)
	line("streamed, first chunk, median", td, tp)
	line("streamed, first chunk, p90", quantileD(s.TTFCDirect, 0.9), quantileD(s.TTFCProxy, 0.9))
	rd, rp := medianF(s.RateDirect), medianF(s.RateProxy)
	fmt.Printf("%-34s %11.0f %11.0f %11s %8.2fx\n", fmt.Sprintf("chunks/s (%d SSE events), median", s.Events), rd, rp, "", rp/rd)
	fmt.Printf("call overhead %.3f ms, target < %.1f ms: %s\n", benchutil.MS(cp-cd), benchutil.MS(targetOverhead), verdict(cp-cd < targetOverhead))
	fmt.Printf("first chunk +%.3f ms, target within %.0f ms: %s\n", benchutil.MS(tp-td), benchutil.MS(targetTTFC), verdict(tp-td <= targetTTFC))
	fmt.Printf("proxied stream %.0f chunks/s, target >= %.0f: %s\n", rp, targetRate, verdict(rp >= targetRate))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// child measures; it runs under the recording proxy.
func child(out string) error {
	var p params
	if err := json.Unmarshal([]byte(os.Getenv(envParams)), &p); err != nil {
		return fmt.Errorf("%s: %w", envParams, err)
	}
	direct, proxied := os.Getenv(envDirect), os.Getenv("OPENAI_BASE_URL")
	if direct == "" || proxied == "" || direct == proxied {
		return errors.New("want the direct URL and OPENAI_BASE_URL pointing at the proxy")
	}
	c := &client{http: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	s := &samples{}
	if p.Steps > 0 {
		if err := c.stepsChild(p, direct, proxied, s); err != nil {
			return err
		}
		return writeSamples(out, s)
	}
	var err error
	if s.CallDirect, s.CallProxy, err = pairs(p.Calls, direct, proxied, c.call); err != nil {
		return err
	}
	if s.TTFCDirect, s.TTFCProxy, err = pairs(p.TTFC, direct, proxied, c.firstChunk); err != nil {
		return err
	}
	if err := c.streams(p.Streams, direct, proxied, s); err != nil {
		return err
	}
	return writeSamples(out, s)
}

// writeSamples writes s to the file the parent reads.
func writeSamples(out string, s *samples) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// client makes the calls; n numbers them, so that no two bodies are alike
// (agents never send the same conversation twice).
type client struct {
	http *http.Client
	n    int
}

// pairs warms both paths up, then measures n calls on each, alternating
// which goes first.
func pairs(n int, direct, proxied string, f func(base string) (time.Duration, error)) (d, p []int64, err error) {
	for range 20 {
		if _, err := f(direct); err != nil {
			return nil, nil, fmt.Errorf("direct: %w", err)
		}
		if _, err := f(proxied); err != nil {
			return nil, nil, fmt.Errorf("proxy: %w", err)
		}
	}
	for i := range n {
		order := []string{direct, proxied}
		if i%2 == 1 {
			order = []string{proxied, direct}
		}
		for _, base := range order {
			t, err := f(base)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", base, err)
			}
			if base == direct {
				d = append(d, int64(t))
			} else {
				p = append(p, int64(t))
			}
		}
	}
	return d, p, nil
}

func (c *client) body(user string, stream bool) []byte {
	c.n++
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": stream, "messages": []map[string]string{
		{"role": "system", "content": "You are a careful coding agent. Use the tools to inspect and change files."},
		{"role": "user", "content": user + " (call " + strconv.Itoa(c.n) + ")"}}})
	return b
}

func (c *client) post(base string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench-not-a-key")
	resp, err := c.http.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		err = fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	return resp, err
}

// call times one non-streamed completion, body read to the end.
func (c *client) call(base string) (time.Duration, error) {
	body := c.body("Refactor the config loader and keep the tests green.", false)
	start := time.Now()
	resp, err := c.post(base, body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// firstChunk times a streamed completion up to its first SSE event, then
// reads the rest.
func (c *client) firstChunk(base string) (time.Duration, error) {
	body := c.body("Refactor the config loader and keep the tests green.", true)
	start := time.Now()
	resp, err := c.post(base, body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return 0, fmt.Errorf("no event in the stream: %w", err)
		}
		if bytes.HasPrefix(line, []byte("data: ")) {
			break
		}
	}
	d := time.Since(start)
	_, err = io.Copy(io.Discard, r)
	return d, err
}

// streams reads n long streams on each side, alternating, and keeps the
// SSE events per second of each.
func (c *client) streams(n int, direct, proxied string, s *samples) error {
	for i := range n + 1 { // the first round warms up
		for _, base := range []string{direct, proxied} {
			events, d, err := c.stream(base)
			if err != nil {
				return fmt.Errorf("%s: %w", base, err)
			}
			if i == 0 {
				continue
			}
			s.Events = events
			rate := float64(events) / d.Seconds()
			if base == direct {
				s.RateDirect = append(s.RateDirect, rate)
			} else {
				s.RateProxy = append(s.RateProxy, rate)
			}
		}
	}
	return nil
}

// stream reads the long stream to its end and counts its events.
func (c *client) stream(base string) (int, time.Duration, error) {
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o-mini", "stream": true,
		"messages": []map[string]string{{"role": "user", "content": "bench-long"}}})
	start := time.Now()
	resp, err := c.post(base, body)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	events := 0
	for sc.Scan() {
		if bytes.HasPrefix(sc.Bytes(), []byte("data: ")) {
			events++
		}
	}
	return events, time.Since(start), sc.Err()
}

func medianD(ns []int64) time.Duration { return quantileD(ns, 0.5) }

func quantileD(ns []int64, q float64) time.Duration {
	s := slices.Clone(ns)
	slices.Sort(s)
	return time.Duration(s[int(q*float64(len(s)-1)+0.5)])
}

func medianF(fs []float64) float64 {
	s := slices.Clone(fs)
	slices.Sort(s)
	return s[len(s)/2]
}
