package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startDemoModel runs c in the background and returns its root URL, a stop
// function that waits for Run to return, and the captured stdout.
func startDemoModel(t *testing.T, c *DemoModelCmd) (string, func() error, *bytes.Buffer) {
	t.Helper()
	ready := make(chan string, 1)
	c.ready = ready
	ctx, stop := context.WithCancel(t.Context()) // as SIGTERM cancels main's context
	var stdout, stderr bytes.Buffer
	errc := make(chan error, 1)
	go func() { errc <- c.Run(ctx, &Env{Stdout: &stdout, Stderr: &stderr}) }()
	select {
	case url := <-ready:
		return url, func() error { stop(); return <-errc }, &stdout
	case err := <-errc:
		t.Fatalf("demo-model stopped before serving: %v; stderr: %s", err, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("demo-model did not start")
	}
	return "", nil, nil
}

func TestDemoModelServesAndStops(t *testing.T) {
	url, stop, stdout := startDemoModel(t, &DemoModelCmd{Addr: "127.0.0.1:0", Quiet: true})
	want := "OPENAI_BASE_URL=" + url + "/v1\nANTHROPIC_BASE_URL=" + url + "\n"
	if stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	body := `{"model":"demo-large","messages":[{"role":"user","content":"Say hello"}]}`
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "Hello from demo-large!") {
		t.Errorf("chat: %d %s", resp.StatusCode, b)
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := http.Get(url + "/v1/models"); err == nil {
		t.Error("server still answers after stop")
	}
}

func TestDemoModelScriptFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	script := `{"version":1,"rules":[{"match":{},"reply":{"text":"scripted"}}]}`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	url, stop, stdout := startDemoModel(t, &DemoModelCmd{Addr: "127.0.0.1:0", Script: path, Quiet: true, JSON: true})
	defer stop()
	var urls demoModelURLs
	if err := json.Unmarshal(stdout.Bytes(), &urls); err != nil || urls.OpenAIBaseURL != url+"/v1" {
		t.Fatalf("json output %q: %v", stdout.String(), err)
	}
	resp, err := http.Post(url+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"text":"scripted"`) {
		t.Errorf("messages: %s", b)
	}
}

func TestDemoModelBadScript(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(path, []byte(`{"version":1,"rules":[{"match":{"user":"("},"reply":{"text":"x"}}]}`), 0o644)
	var out bytes.Buffer
	err := (&DemoModelCmd{Addr: "127.0.0.1:0", Script: path}).Run(t.Context(), &Env{Stdout: &out, Stderr: &out})
	if err == nil || codeFor(err) != ExitUsage || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("err %v (code %d), want a usage error naming the file", err, codeFor(err))
	}
}
