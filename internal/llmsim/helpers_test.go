package llmsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testScript is a small script that exercises text, tool calls and both.
const testScript = `{
  "version": 1,
  "defaults": {"chunk_size": 5},
  "rules": [
    {"name": "both", "match": {"user": "both"}, "reply": {"text": "Calling two tools for {{model}}.",
      "tool_calls": [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "line \"one\"\nline <two> & {{user}}"}},
        {"name": "read_file", "arguments": {"path": "a.txt"}}
      ]}},
    {"name": "tool-only", "match": {"user": "tool only"}, "reply": {"tool_calls": [{"name": "run_shell", "arguments": {"command": "echo héllo ✓"}}]}},
    {"name": "text", "match": {"user": "text"}, "reply": {"text": "Plain text from {{model}}: ünïcode ✓ done."}}
  ]
}`

// newTestServer serves script (testScript when empty) on an httptest server.
func newTestServer(t testing.TB, script string) (*Server, string) {
	t.Helper()
	if script == "" {
		script = testScript
	}
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := New(s)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return srv, ts.URL
}

// post sends body to url+path and returns the response and its whole body.
func post(t testing.TB, url, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", path, err)
	}
	return resp, b
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data string
}

// parseSSE parses an event stream strictly: every event is "event: X\n"
// (optional) then one "data: ...\n", then a blank line, and nothing else.
func parseSSE(t testing.TB, b []byte) []sseEvent {
	t.Helper()
	if !bytes.HasSuffix(b, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", tail(b))
	}
	var out []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(string(b), "\n\n"), "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: ") && ev.name == "" && ev.data == "":
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && ev.data == "":
				ev.data = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q in block %q", line, block)
			}
		}
		if ev.data == "" {
			t.Fatalf("event without data: %q", block)
		}
		out = append(out, ev)
	}
	return out
}

func tail(b []byte) []byte { return b[max(0, len(b)-80):] }

// decode unmarshals data into a generic map, failing the test if it is not
// a JSON object.
func decode(t testing.TB, data string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, data)
	}
	return m
}

// get walks a decoded JSON value by keys and indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// mustJSONObject checks s is a JSON object and returns it decoded.
func mustJSONObject(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("arguments are not a JSON object: %v: %q", err, s)
	}
	return m
}

// wantArgs are the assembled tool calls the "both" rule must produce.
var wantBoth = []struct{ name, args string }{
	{"write_file", `{"path":"a.txt","content":"line \"one\"\nline <two> & please both"}`},
	{"read_file", `{"path":"a.txt"}`},
}

const bothUser = "please both"

// getURL GETs url with headers and returns the status and body.
func getURL(t testing.TB, url string, headers map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
