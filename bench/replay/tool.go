package main

// The whole-process figure of issue 29: an agent process making 50 streamed
// model calls with a tool's HTTP call (a plain GET through the proxy
// variables) after each, replayed by engine.Replay from a tape that holds
// both, against the same process talking to a local server, with no tape,
// that serves the same answers. Target: replay within 1.3x.

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

	"github.com/jukebox-os/jukebox/bench/internal/benchutil"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// toolAgentEnv makes this binary the agent (see main).
const toolAgentEnv = "JUKEBOX_BENCH_TOOL_AGENT"

// toolHost is the tool API the agent calls between model calls.
const toolHost = "tools.bench.test"

const targetTool = 1.3

func toolAnswer(step int) []byte {
	return []byte(`{"step":` + strconv.Itoa(step) + `,"results":[{"title":"jukebox","url":"https://example.com/` + strconv.Itoa(step) + `"}]}`)
}

// toolAgent is the agent: each step, the recorded model request to
// OPENAI_BASE_URL, then GET http://tools.bench.test/search?step=N through
// the HTTP proxy (HTTP_PROXY, else jukebox's own address until jukebox
// sets the proxy variables), each answer checked against what it should be.
func toolAgent() int {
	proxy, err := url.Parse(os.Getenv("HTTP_PROXY"))
	if os.Getenv("HTTP_PROXY") == "" {
		proxy, err = url.Parse(strings.TrimSuffix(os.Getenv("JUKEBOX_CONTROL"), "/_jukebox"))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		return 1
	}
	tr := &http.Transport{DisableCompression: true, Proxy: func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == toolHost {
			return proxy, nil
		}
		return nil, nil
	}}
	client := &http.Client{Transport: tr}
	model := os.Getenv("OPENAI_BASE_URL") + "/chat/completions"
	for i, in := range tapegen.Interactions(spec) {
		if err := fetch(client, "POST", model, in.Request, in.Response); err != nil {
			fmt.Fprintf(os.Stderr, "agent: step %d model: %v\n", i, err)
			return 1
		}
		if err := fetch(client, "GET", "http://"+toolHost+"/search?step="+strconv.Itoa(i), nil, toolAnswer(i)); err != nil {
			fmt.Fprintf(os.Stderr, "agent: step %d tool: %v\n", i, err)
			return 1
		}
	}
	return 0
}

func fetch(c *http.Client, method, u string, body, want []byte) error {
	r, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
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

// writeToolTape writes the run as the recorder would: each step's model
// call, then its tool call as http.request/http.response frames.
func writeToolTape(path, exe string) error {
	return tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{exe}, Mode: tapefmt.ModeRecord})
		json := http.Header{"Content-Type": {"application/json"}}
		for i, in := range tapegen.Interactions(spec) {
			req, _ := w.PutBlob("req", in.Request)
			resp, _ := w.PutBlob("resp", in.Response)
			w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
				Header: json, Body: req, Size: int64(len(in.Request)), Model: spec.Model, Stream: true})
			w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: resp, Size: int64(len(in.Response)),
				Header: http.Header{"Content-Type": {"text/event-stream"}}, Chunks: in.Chunks})
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

// runTool measures both sides runs times (after a warm-up) and prints the
// medians and their ratio.
func runTool(dir string, runs int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	tape := dir + "/tool.jbx"
	if err := writeToolTape(tape, exe); err != nil {
		return err
	}
	addr, stop, err := localServer()
	if err != nil {
		return err
	}
	defer stop()
	var rep, loc []time.Duration
	for i := range runs + 1 {
		r, err := replayTool(tape, exe)
		if err != nil {
			return err
		}
		l, err := localTool(addr, exe)
		if err != nil {
			return err
		}
		if i > 0 {
			rep, loc = append(rep, r), append(loc, l)
		}
	}
	rm, lm := benchutil.Median(rep), benchutil.Median(loc)
	fmt.Printf("\nwhole process, %d steps with a tool HTTP call after each model call, medians of %d runs:\n", spec.Steps, runs)
	fmt.Printf("replay from the tape %.1f ms; no-tape local server serving the same answers %.1f ms\n", benchutil.MS(rm), benchutil.MS(lm))
	fmt.Printf("replay / local server: %.2fx, target <= %.1fx: %s\n", float64(rm)/float64(lm), targetTool, verdict(float64(rm)/float64(lm) <= targetTool))
	return nil
}

func replayTool(tape, exe string) (time.Duration, error) {
	var stderr bytes.Buffer
	start := time.Now()
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{From: tape, RunOptions: engine.RunOptions{
		Argv: []string{exe}, Env: append(withoutProxy(os.Environ()), toolAgentEnv+"=1"), Stdout: io.Discard, Stderr: &stderr}})
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

func localTool(addr, exe string) (time.Duration, error) {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), toolAgentEnv+"=1", "OPENAI_BASE_URL=http://"+addr+"/v1", "HTTP_PROXY=http://"+addr)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("agent against the local server: %v: %s", err, out)
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
