package engine

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// writeCounter records each Write as the client would see a chunk.
type writeCounter struct {
	*httptest.ResponseRecorder
	writes [][]byte
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, append([]byte(nil), p...))
	return w.ResponseRecorder.Write(p)
}

// TestReplayKeepsChunkBoundaries: at a recorded pace (here 10,000 times
// faster than recorded), each recorded chunk is written and flushed on its
// own, so the agent reads the stream in the pieces the upstream sent;
// at instant speed the body goes in one write. Either way the bytes are the
// recorded ones.
func TestReplayKeepsChunkBoundaries(t *testing.T) {
	body := []byte("data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n")
	chunks := tapefmt.Chunks{{End: 15, At: 1000}, {End: 30, At: 2000}, {End: int64(len(body)), At: 3000}}
	c := &Call{Response: &tapefmt.LLMResponse{Status: 200, Chunks: chunks,
		Header: http.Header{"Content-Type": {"text/event-stream"}}}, respBody: body, respRead: true}
	for _, sp := range []struct {
		speed  Speed
		writes int
	}{{10000, 3}, {0, 1}} {
		w := &writeCounter{ResponseRecorder: httptest.NewRecorder()}
		x := &exchange{req: httptest.NewRequest(http.MethodPost, "/openai/v1/chat/completions", nil)}
		tb := &tapeBackend{speed: sp.speed, m: &Matcher{}}
		tb.serve(w, x, c)
		if len(w.writes) != sp.writes || !bytes.Equal(w.Body.Bytes(), body) || w.Code != 200 {
			t.Fatalf("speed %v: %d writes %q, code %d; want %d writes of the recorded body", sp.speed, len(w.writes), w.writes, w.Code, sp.writes)
		}
		if sp.writes == 3 && string(w.writes[0]) != string(body[:15]) {
			t.Fatalf("first chunk %q, want %q", w.writes[0], body[:15])
		}
	}
}

// TestUpstreamURL: the API path goes after the base URL's path and the
// base URL's own query (a gateway's ?key=) is kept; it was pasted after
// the query before, as http://h/v1?key=K/chat/completions.
func TestUpstreamURL(t *testing.T) {
	for _, c := range []struct{ base, rest, query, want string }{
		{"http://h/v1", "/chat/completions", "", "http://h/v1/chat/completions"},
		{"http://h/v1/", "/chat/completions", "", "http://h/v1/chat/completions"},
		{"http://h/v1?key=K", "/chat/completions", "", "http://h/v1/chat/completions?key=K"},
		{"http://h/v1?key=K", "/models", "limit=2", "http://h/v1/models?key=K&limit=2"},
		{"http://h", "/v1/messages", "beta=true", "http://h/v1/messages?beta=true"},
	} {
		if got := upstreamURL(c.base, c.rest, c.query); got != c.want {
			t.Errorf("upstreamURL(%q, %q, %q) = %q, want %q", c.base, c.rest, c.query, got, c.want)
		}
	}
}

// TestOverridesScopeOfEarlierForks: a fork tape written before scopes
// were recorded has none, and replaying it applies its overrides to the
// fork call alone; a tape with scope "all" applies them to later calls to
// the fork call's endpoint too.
func TestOverridesScopeOfEarlierForks(t *testing.T) {
	for _, c := range []struct {
		overrides string
		later     string // a later call's body after prepare
	}{
		{`{"model":"m2"}`, `{"model":"m1"}`},
		{`{"model":"m2","scope":"once"}`, `{"model":"m1"}`},
		{`{"model":"m2","scope":"all"}`, `{"model":"m2"}`},
	} {
		var o Overrides
		if err := json.Unmarshal([]byte(c.overrides), &o); err != nil {
			t.Fatal(err)
		}
		tb := &tapeBackend{forkCall: 1, overrides: o}
		req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		for call := uint64(0); call < 3; call++ {
			x := &exchange{provider: providers[0], path: "/v1/chat/completions", req: req, call: call, body: []byte(`{"model":"m1"}`)}
			tb.prepare(x)
			want := `{"model":"m1"}`
			switch {
			case call == 1:
				want = `{"model":"m2"}`
			case call == 2:
				want = c.later
			}
			if string(x.body) != want {
				t.Errorf("overrides %s, call %d: %s, want %s", c.overrides, call, x.body, want)
			}
		}
	}
}
