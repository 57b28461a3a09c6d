package llmsim

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

const failScript = `{"version": 1, "defaults": {"chunk_size": 4}, "rules": [
  {"name": "429", "match": {"user": "^rate$"}, "fail": {"status": 429, "retry_after": 2}},
  {"name": "529", "match": {"user": "^overload$"}, "fail": {"status": 529}},
  {"name": "custom", "match": {"user": "^custom$"}, "fail": {"status": 500, "body": {"weird": [1, 2]}}},
  {"name": "reset0", "match": {"user": "^reset0$"}, "reply": {"text": "never sent"}, "fail": {"reset_after_chunks": 0}},
  {"name": "reset3", "match": {"user": "^reset3$"}, "reply": {"text": "a long enough answer to be cut"}, "fail": {"reset_after_chunks": 3}},
  {"name": "hang", "match": {"user": "^hang$"}, "reply": {"text": "late"}, "fail": {"hang": true}},
  {"name": "hang2", "match": {"user": "^hang2$"}, "reply": {"text": "a long enough answer to stall"}, "fail": {"hang_after_chunks": 2}},
  {"name": "flaky", "match": {"user": "^flaky$"}, "times": 1, "fail": {"status": 503}},
  {"name": "recovered", "match": {"user": "^flaky$"}, "reply": {"text": "fine now"}}
]}`

func TestFailStatus(t *testing.T) {
	_, url := newTestServer(t, failScript)
	resp, b := post(t, url, "/v1/chat/completions", chatBody("m", "rate", true, false))
	m := decode(t, string(b))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || get(m, "error", "code") != "rate_limit_exceeded" ||
		!strings.Contains(get(m, "error", "message").(string), "Rate limit") {
		t.Errorf("429: %d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp, b = post(t, url, "/v1/messages", anthropicBody("m", "overload", true))
	m = decode(t, string(b))
	if resp.StatusCode != 529 || get(m, "type") != "error" || get(m, "error", "type") != "overloaded_error" || get(m, "request_id") == nil {
		t.Errorf("529: %d %s", resp.StatusCode, b)
	}
	if resp, b = post(t, url, "/v1/responses", `{"model":"m","input":"custom"}`); resp.StatusCode != 500 || string(b) != `{"weird":[1,2]}` {
		t.Errorf("custom: %d %s", resp.StatusCode, b)
	}
	if resp, _ = post(t, url, "/v1/chat/completions", chatBody("m", "flaky", false, false)); resp.StatusCode != 503 {
		t.Errorf("flaky first: %d", resp.StatusCode)
	}
	if resp, b = post(t, url, "/v1/chat/completions", chatBody("m", "flaky", false, false)); resp.StatusCode != 200 || !strings.Contains(string(b), "fine now") {
		t.Errorf("flaky second: %d %s", resp.StatusCode, b)
	}
}

func TestFailReset(t *testing.T) {
	_, url := newTestServer(t, failScript)
	if _, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody("m", "reset0", false, false))); err == nil {
		t.Error("reset before the status line: the request succeeded")
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", chatBody("m", "reset3", true, false)},
		{"/v1/chat/completions", chatBody("m", "reset3", false, false)},
		{"/v1/messages", anthropicBody("m", "reset3", true)},
		{"/v1/responses", `{"model":"m","stream":true,"input":"reset3"}`},
	} {
		resp, err := http.Post(url+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		events, err := readEvents(resp)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: body ended cleanly, want a reset", tc.path)
		}
		if strings.Contains(tc.body, `"stream":true`) && events != 3 {
			t.Errorf("%s: %d events before the reset, want 3", tc.path, events)
		}
	}
}

// readEvents counts complete SSE events until the body ends or fails.
func readEvents(resp *http.Response) (int, error) {
	r := bufio.NewReader(resp.Body)
	n := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				return n, nil
			}
			return n, err
		}
		if line == "\n" {
			n++
		}
	}
}

// TestFailHang is not parallel: it gives the server 300 ms to send its
// first events, which other tests' work (the SDK agents) can take away.
func TestFailHang(t *testing.T) {
	srv, url := newTestServer(t, failScript)
	client := &http.Client{Timeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(chatBody("m", "hang", false, false)))
	var ne interface{ Timeout() bool }
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) > 5*time.Second {
		t.Fatalf("hang: err %v after %v, want a client timeout", err, time.Since(start))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", strings.NewReader(anthropicBody("m", "hang2", true)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := readEvents(resp)
	resp.Body.Close()
	if n != 2 || err == nil {
		t.Errorf("hang after 2: %d events, err %v", n, err)
	}

	done := make(chan error, 1)
	wrote := make(chan struct{})
	go func() {
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { close(wrote) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			http.MethodPost, url+"/v1/chat/completions", strings.NewReader(chatBody("m", "hang", false, false)))
		_, err := http.DefaultClient.Do(req)
		done <- err
	}()
	select { // the request is on its way before the server closes
	case <-wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging request was never sent")
	}
	srv.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a hang released by Close answered normally; want a dropped connection")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release a hanging request")
	}
}
