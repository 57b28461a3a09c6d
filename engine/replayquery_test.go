package engine

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// plainExchange is one recorded http.request and its http.response.
type plainExchange struct {
	req  tapefmt.HTTPRequest
	body []byte
	resp tapefmt.HTTPResponse
	out  []byte
}

// modelExchange is one recorded llm.request and its llm.response.
type modelExchange struct {
	req  tapefmt.LLMRequest
	body []byte
	out  []byte
}

// writeWorldTape writes a tape holding the model calls and plain HTTP
// exchanges given, in order (model calls first), as the recorder would.
func writeWorldTape(t *testing.T, models []modelExchange, plains []plainExchange) *tapefmt.Tape {
	t.Helper()
	path := filepath.Join(t.TempDir(), "world.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		if _, err := w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}, Mode: tapefmt.ModeRecord}); err != nil {
			return err
		}
		for i, m := range models {
			m.req.Call, m.req.Size = uint64(i), int64(len(m.body))
			m.req.Body, _ = w.PutBlob("req", m.body)
			w.Append(0, m.req)
			h, _ := w.PutBlob("resp", m.out)
			w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Body: h, Size: int64(len(m.out)),
				Header: http.Header{"Content-Type": {"application/json"}}})
		}
		for i, p := range plains {
			p.req.ID, p.req.Size = uint64(i), int64(len(p.body))
			p.req.Body, _ = w.PutBlob("req", p.body)
			w.Append(0, p.req)
			p.resp.ID, p.resp.Size = uint64(i), int64(len(p.out))
			p.resp.Body, _ = w.PutBlob("resp", p.out)
			if _, err := w.Append(0, p.resp); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return openTape(t, path)
}

// azureTape holds an Azure-style chat call with ?api-version= and a file
// upload with ?purpose=.
func azureTape(t *testing.T) *tapefmt.Tape {
	return writeWorldTape(t, []modelExchange{
		{req: tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Query: "api-version=2024-02-01",
			Header: http.Header{"Content-Type": {"application/json"}}}, body: []byte(`{"model":"m","messages":[]}`), out: []byte(`{"id":"chat-1"}`)},
		{req: tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/files", Query: "purpose=assistants",
			Header: http.Header{"Content-Type": {"application/json"}}}, body: []byte(`{}`), out: []byte(`{"id":"file-1"}`)},
	}, nil)
}

// serveOne sends one request to h and returns the recorder.
func serveOne(h http.Handler, method, url, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, url, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestReplayQueryStringsMatch: a model call whose ?api-version= or
// ?purpose= differs from the recorded one is not served the recorded
// answer; the same query (in any order) is. It was served before.
func TestReplayQueryStringsMatch(t *testing.T) {
	for _, c := range []struct {
		url  string
		body string
		code int
	}{
		{"/openai/v1/chat/completions?api-version=2024-06-01", `{"model":"m","messages":[]}`, 400},
		{"/openai/v1/chat/completions?api-version=2024-02-01", `{"model":"m","messages":[]}`, 200},
		{"/openai/v1/files?purpose=fine-tune", `{}`, 400},
		{"/openai/v1/files?purpose=assistants", `{}`, 200},
		// An in-process client (the replay handler's, a bench) names
		// jukebox's own route on loopback: routed, not forwarded.
		{"http://127.0.0.1/openai/v1/chat/completions?api-version=2024-02-01", `{"model":"m","messages":[]}`, 200},
	} {
		h, err := NewReplayHandler(azureTape(t), reqmatch.Default(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if w := serveOne(h, "POST", c.url, c.body); w.Code != c.code {
			t.Errorf("%s: answered %d %s, want %d", c.url, w.Code, w.Body, c.code)
		}
	}
}

// searchTape holds one plain GET to a search API, answered 203 with its
// own headers and a body streamed in two chunks.
func searchTape(t *testing.T) (*tapefmt.Tape, []byte) {
	out := []byte("{\"results\":[\"jukebox\"]}\n\x00\xff binary tail")
	return writeWorldTape(t, nil, []plainExchange{{
		req: tapefmt.HTTPRequest{Scheme: "http", Host: "search.example.test", Method: "GET", Path: "/v1/search", Query: "q=jukebox&n=2"},
		resp: tapefmt.HTTPResponse{Status: 203, Header: http.Header{"Content-Type": {"application/octet-stream"}, "X-Ratelimit-Remaining": {"41"}},
			Chunks: tapefmt.Chunks{{End: 10, At: 1000}, {End: int64(len(out)), At: 2000}}},
		out: out,
	}}), out
}

// TestReplayServesPlainHTTP: a plain request on the tape is answered with
// the recorded status, headers and body, byte for byte, at either speed;
// its query in another order still matches.
func TestReplayServesPlainHTTP(t *testing.T) {
	for _, speed := range []Speed{0, 1000} {
		tp, out := searchTape(t)
		h, err := NewReplayHandler(tp, reqmatch.Default(), speed)
		if err != nil {
			t.Fatal(err)
		}
		w := serveOne(h, "GET", "http://search.example.test/v1/search?n=2&q=jukebox", "")
		if w.Code != 203 || !bytes.Equal(w.Body.Bytes(), out) || w.Header().Get("X-Ratelimit-Remaining") != "41" ||
			w.Header().Get("Content-Type") != "application/octet-stream" {
			t.Fatalf("speed %v: answered %d %v %q; want 203, the recorded headers and %q", speed, w.Code, w.Header(), w.Body, out)
		}
	}
}

// openTape opens the tape at path until the test ends.
func openTape(t *testing.T, path string) *tapefmt.Tape {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tp.Close() })
	return tp
}
