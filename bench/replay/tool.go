package main

// The whole-process figures. Issue 29: an agent process making 50 streamed
// model calls with a tool's HTTP call (a plain GET through the proxy
// variables) after each, replayed by engine.Replay from a tape that holds
// both, against the same process talking to a local server, with no tape,
// that serves the same answers. Target: replay within 1.3x. The agent, its
// tape, the local server and the interleaved timing are shared with issue
// 31's figures (client.go).

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"gopkg.in/dnaeon/go-vcr.v4/pkg/recorder"

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// agentEnv makes this binary the Go agent (see main): its value is the
// number of model calls, followed by "+tools" for a tool call after each.
// With cassetteEnv set too, the agent replays that go-vcr cassette itself.
const (
	agentEnv    = "JUKEBOX_BENCH_AGENT"
	cassetteEnv = "JUKEBOX_BENCH_CASSETTE"
)

// toolHost is the tool API the agent calls between model calls.
const toolHost = "tools.bench.test"

const targetTool = 1.3

// agentRun is what one agent process does: the first steps model calls of
// the run, each followed by a tool call when tools is set.
type agentRun struct {
	steps int
	tools bool
}

func (a agentRun) env() string {
	v := strconv.Itoa(a.steps)
	if a.tools {
		v += "+tools"
	}
	return agentEnv + "=" + v
}

func parseAgentRun(v string) (agentRun, error) {
	n, tools := strings.CutSuffix(v, "+tools")
	steps, err := strconv.Atoi(n)
	if err != nil || steps < 1 || steps > spec.Steps {
		return agentRun{}, fmt.Errorf("%s=%q: want a step count from 1 to %d, optionally followed by +tools", agentEnv, v, spec.Steps)
	}
	return agentRun{steps: steps, tools: tools}, nil
}

func toolAnswer(step int) []byte {
	return []byte(`{"step":` + strconv.Itoa(step) + `,"results":[{"title":"jukebox","url":"https://example.com/` + strconv.Itoa(step) + `"}]}`)
}

// goAgent is the Go agent: each step, the recorded model request to
// OPENAI_BASE_URL with the SDK's headers (or, with a cassette, to the public
// API through go-vcr's replaying client), then, with tools, GET
// http://tools.bench.test/search?step=N through the HTTP proxy (HTTP_PROXY,
// else jukebox's own address until jukebox sets the proxy variables), each
// answer checked against what it should be.
func goAgent() int {
	a, err := parseAgentRun(os.Getenv(agentEnv))
	if err == nil {
		err = a.run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	return 0
}

func (a agentRun) run() error {
	client, model := &http.Client{}, os.Getenv("OPENAI_BASE_URL")+"/chat/completions"
	if cas := os.Getenv(cassetteEnv); cas != "" {
		r, err := recorder.New(cas, recorder.WithMode(recorder.ModeReplayOnly), recorder.WithSkipRequestLatency(true))
		if err != nil {
			return err
		}
		client, model = r.GetDefaultClient(), vcrURL
	} else if a.tools {
		proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
		if os.Getenv("HTTP_PROXY") == "" {
			proxy, err = url.Parse(strings.TrimSuffix(os.Getenv("JUKEBOX_CONTROL"), "/_jukebox"))
		}
		if err != nil {
			return err
		}
		client.Transport = &http.Transport{DisableCompression: true, Proxy: func(r *http.Request) (*url.URL, error) {
			if r.URL.Host == toolHost {
				return proxy, nil
			}
			return nil, nil
		}}
	}
	for i, in := range tapegen.Interactions(spec)[:a.steps] {
		if err := fetch(client, "POST", model, in.Request, in.Response); err != nil {
			return fmt.Errorf("step %d model: %w", i, err)
		}
		if !a.tools {
			continue
		}
		if err := fetch(client, "GET", "http://"+toolHost+"/search?step="+strconv.Itoa(i), nil, toolAnswer(i)); err != nil {
			return fmt.Errorf("step %d tool: %w", i, err)
		}
	}
	return nil
}

func fetch(c *http.Client, method, u string, body, want []byte) error {
	r, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		r.Header = sdkHeader()
	}
	resp, err := c.Do(r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err == nil && !bytes.Equal(got, want) {
		err = fmt.Errorf("status %d, %d bytes, not the %d expected: %.200s", resp.StatusCode, len(got), len(want), got)
	}
	return err
}

// writeAgentTape writes the run of argv as the recorder would: each step's
// model call, then, with tools, its tool call as http.request/http.response
// frames.
func writeAgentTape(path string, argv []string, a agentRun) error {
	return tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: argv, Mode: tapefmt.ModeRecord})
		json := http.Header{"Content-Type": {"application/json"}}
		for i, in := range tapegen.Interactions(spec)[:a.steps] {
			req, _ := w.PutBlob("req", in.Request)
			resp, _ := w.PutBlob("resp", in.Response)
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
				Header: json, Body: req, Size: int64(len(in.Request)), Model: spec.Model, Stream: true})
			if _, err := w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: resp, Size: int64(len(in.Response)),
				Header: http.Header{"Content-Type": {"text/event-stream"}}, Chunks: in.Chunks}); err != nil || !a.tools {
				if err != nil {
					return err
				}
				continue
			}
			tool, _ := w.PutBlob("tool", toolAnswer(i))
			w.Append(0, tapefmt.HTTPRequest{ID: uint64(i), Scheme: "http", Host: toolHost, Method: "GET", Path: "/search", Query: "step=" + strconv.Itoa(i)})
			if _, err := w.Append(0, tapefmt.HTTPResponse{ID: uint64(i), Status: 200, Header: json, Body: tool, Size: int64(len(toolAnswer(i)))}); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
}

// localServer serves the same answers with no tape: model answers by
// request body, tool answers by step; it is the agent's HTTP proxy too.
func localServer() (addr string, stop func(), err error) {
	answers := map[string][]byte{}
	for _, in := range tapegen.Interactions(spec) {
		answers[string(in.Request)] = in.Response
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/search" {
			step, _ := strconv.Atoi(r.URL.Query().Get("step"))
			w.Header().Set("Content-Type", "application/json")
			w.Write(toolAnswer(step))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(answers[string(body)])
	})}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close() }, nil
}

// interleaved times a and b alternately, runs times each after one
// warm-up round, and returns both medians.
func interleaved(runs int, a, b func() (time.Duration, error)) (am, bm time.Duration, err error) {
	var as, bs []time.Duration
	for i := range runs + 1 {
		x, err := a()
		if err != nil {
			return 0, 0, err
		}
		y, err := b()
		if err != nil {
			return 0, 0, err
		}
		if i > 0 {
			as, bs = append(as, x), append(bs, y)
		}
	}
	return benchutil.Median(as), benchutil.Median(bs), nil
}

// figure prints one whole-process comparison: its title, both medians and
// the ratio of the first to the second against target.
type figure struct {
	title, what, peer, ratio string
	target                   float64
}

func (f figure) print(runs int, d, peer time.Duration) {
	r := float64(d) / float64(peer)
	fmt.Printf("\n%s, medians of %d runs:\n", f.title, runs)
	fmt.Printf("%s %.1f ms; %s %.1f ms\n", f.what, benchutil.MS(d), f.peer, benchutil.MS(peer))
	fmt.Printf("%s: %.2fx, target <= %.2fx: %s\n", f.ratio, r, f.target, verdict(r <= f.target))
}

// runTool measures issue 29's figure.
func runTool(dir string, runs int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	a := agentRun{steps: spec.Steps, tools: true}
	tape := dir + "/tool.jbx"
	if err := writeAgentTape(tape, []string{exe}, a); err != nil {
		return err
	}
	addr, stop, err := localServer()
	if err != nil {
		return err
	}
	defer stop()
	rm, lm, err := interleaved(runs, func() (time.Duration, error) { return replayAgent(tape, []string{exe}, a.env()) },
		func() (time.Duration, error) { return localAgent(addr, []string{exe}, a.env()) })
	if err != nil {
		return err
	}
	figure{title: fmt.Sprintf("whole process, %d steps with a tool HTTP call after each model call", spec.Steps),
		what: "replay from the tape", peer: "no-tape local server serving the same answers",
		ratio: "replay / local server", target: targetTool}.print(runs, rm, lm)
	return nil
}

// replayAgent runs argv under engine.Replay from tape, with env added to
// the environment, and times the call.
func replayAgent(tape string, argv []string, env ...string) (time.Duration, error) {
	var stderr bytes.Buffer
	start := time.Now()
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{From: tape, RunOptions: engine.RunOptions{
		Argv: argv, Env: append(withoutProxy(os.Environ()), env...), Stdout: io.Discard, Stderr: &stderr}})
	d := time.Since(start)
	switch {
	case err != nil:
		return 0, err
	case res.Divergence != nil:
		return 0, res.Divergence
	case res.End.ExitCode != 0:
		return 0, fmt.Errorf("replayed agent exited %d: %s", res.End.ExitCode, stderr.String())
	}
	return d, nil
}

// localAgent runs argv against the local server at addr (its base URL and
// HTTP proxy), with env added to the environment, and times it.
func localAgent(addr string, argv []string, env ...string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=http://"+addr+"/v1", "HTTP_PROXY=http://"+addr)
	cmd.Env = append(cmd.Env, env...)
	return timed(cmd, "agent against the local server")
}

// timed runs cmd and returns how long it took.
func timed(cmd *exec.Cmd, what string) (time.Duration, error) {
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%s: %v: %s", what, err, out)
	}
	return time.Since(start), nil
}

// withoutProxy is env without an HTTP_PROXY of the caller's, so that the
// replayed agent's tool calls reach jukebox.
func withoutProxy(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HTTP_PROXY=") {
			out = append(out, kv)
		}
	}
	return out
}
