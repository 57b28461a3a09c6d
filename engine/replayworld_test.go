package engine

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

func compiled(t *testing.T, more reqmatch.Rules) *reqmatch.Rules {
	t.Helper()
	r := reqmatch.Default().Merge(more)
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestQueryDivergenceReport: the divergence names the query parameter and
// shows both queries side by side; --ignore query:api-version matches.
func TestQueryDivergenceReport(t *testing.T) {
	tp := azureTape(t)
	m, err := NewMatcher(tp, compiled(t, reqmatch.Rules{}))
	if err != nil {
		t.Fatal(err)
	}
	live := MatchRequest{Method: "POST", Path: "/v1/chat/completions", Query: "api-version=2024-06-01",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"model":"m","messages":[]}`)}
	c, d := m.Match(live)
	if c != nil || d == nil || d.Path != "query:api-version" ||
		!strings.Contains(d.Diff, "-?api-version=2024-02-01") || !strings.Contains(d.Diff, "+?api-version=2024-06-01") {
		t.Fatalf("match %v, divergence %+v; want one at query:api-version with both queries", c, d)
	}
	ig, err := NewMatcher(tp, compiled(t, reqmatch.Rules{Ignore: []string{"query:api-version"}}))
	if err != nil {
		t.Fatal(err)
	}
	if c, d := ig.Match(live); c == nil || d != nil {
		t.Fatalf("ignoring query:api-version: match %v, divergence %v", c, d)
	}
	if err := ig.checkIgnore(); err != nil {
		t.Fatalf("query:api-version is on the tape: %v", err)
	}
	typo, _ := NewMatcher(tp, compiled(t, reqmatch.Rules{Ignore: []string{"query:api-verison", "header:x-nope"}}))
	if err := typo.checkIgnore(); err == nil || !strings.Contains(err.Error(), "query:api-verison") || !strings.Contains(err.Error(), "api-version") {
		t.Fatalf("a query rule naming nothing on the tape: %v", err)
	}
}

// TestReplayClosedWorld: a plain request the tape does not hold (another
// path, host, query or method) is a divergence naming method, host and
// path and the nearest recorded request; nothing is sent.
func TestReplayClosedWorld(t *testing.T) {
	for _, url := range []string{
		"http://search.example.test/v1/other",
		"http://search.example.test/v1/search?q=other&n=2",
		"http://elsewhere.example.test/v1/search?q=jukebox&n=2",
	} {
		tp, _ := searchTape(t)
		m, err := NewMatcher(tp, reqmatch.Default())
		if err != nil {
			t.Fatal(err)
		}
		var div *Divergence
		tb := &tapeBackend{m: m, tape: tp, onDiv: func(d *Divergence) { div = d }, forkCall: -1}
		r := httptest.NewRequest("GET", url, nil)
		x := absExchange(r)
		w := httptest.NewRecorder()
		a := tb.respond(w, x)
		if w.Code != 400 || a.live || div == nil || !strings.Contains(div.Error(), "GET http://") ||
			!strings.Contains(div.Error(), x.host+x.path) {
			t.Fatalf("%s: answered %d, live %v, divergence %v", url, w.Code, a.live, div)
		}
		if div.Frame < 0 && !strings.Contains(div.Nearest, "GET http://search.example.test/v1/search?q=jukebox&n=2") {
			t.Errorf("%s: nearest %q", url, div.Nearest)
		}
	}
}

// TestTelemetryAnsweredLocally: SDK telemetry is answered by jukebox in
// replay, not counted as a divergence.
func TestTelemetryAnsweredLocally(t *testing.T) {
	tp, _ := searchTape(t)
	h, err := NewReplayHandler(tp, reqmatch.Default(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"https://api.smith.langchain.com/runs/batch", "/openai/v1/traces/ingest"} {
		if w := serveOne(h, "POST", url, `{"spans":[]}`); w.Code != 200 {
			t.Errorf("%s: %d %s", url, w.Code, w.Body)
		}
	}
}

// TestHostPatterns: --live names hosts exactly or by glob, a port only
// when the pattern has one.
func TestHostPatterns(t *testing.T) {
	h, err := ParseHostPatterns([]string{"api.github.com,*.githubusercontent.com", "localhost:8080"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"api.github.com": true, "API.GitHub.com:443": true, "raw.githubusercontent.com": true,
		"githubusercontent.com": false, "github.com": false, "localhost:8080": true, "localhost:9090": false,
	} {
		if got := h.Match(host); got != want {
			t.Errorf("Match(%q) = %v, want %v", host, got, want)
		}
	}
	for _, bad := range []string{"", "[a-", "http://x"} {
		if _, err := ParseHostPatterns([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestForkIsClosedBeforeItsFrame: before the fork frame a plain request
// the parent does not hold is a divergence and reaches no server; after
// it, plain requests go live.
func TestForkIsClosedBeforeItsFrame(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "live")
	}))
	defer up.Close()
	tp := writeWorldTape(t, []modelExchange{{req: tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
		Header: http.Header{"Content-Type": {"application/json"}}}, body: []byte(`{"model":"m"}`), out: []byte(`{}`)}}, nil)
	m, err := NewMatcher(tp, reqmatch.Default())
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := requestFrames(tp)
	fb := &forkBackend{tapeBackend: tapeBackend{m: m, tape: tp, forkCall: -1, onDiv: func(*Divergence) {}}, at: reqs[0], live: newLive(nil, RunOptions{})}
	fb.world = &openWorld{live: fb.live}
	ask := func(url string) (*exchange, *httptest.ResponseRecorder) {
		x := absExchange(httptest.NewRequest("GET", url, nil))
		fb.prepare(x)
		w := httptest.NewRecorder()
		fb.respond(w, x).finish(w)
		return x, w
	}
	if x, w := ask(up.URL + "/before"); x.div == nil || w.Code != 400 || hits.Load() != 0 {
		t.Fatalf("before the fork: divergence %v, code %d, upstream hits %d", x.div, w.Code, hits.Load())
	}
	fb.diverged, fb.forked = false, true // as if the fork call had been made
	if _, w := ask(up.URL + "/after"); w.Body.String() != "live" || hits.Load() != 1 {
		t.Fatalf("after the fork: %d %q, hits %d", w.Code, w.Body, hits.Load())
	}
}

// TestOnDivergenceLivePlain: with --on-divergence live, a plain request
// the tape does not hold goes to the origin it names, after the
// divergence is reported, as model calls do.
func TestOnDivergenceLivePlain(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "live "+r.URL.RequestURI())
	}))
	defer up.Close()
	tp, _ := searchTape(t)
	m, err := NewMatcher(tp, reqmatch.Default())
	if err != nil {
		t.Fatal(err)
	}
	var div *Divergence
	tb := &tapeBackend{m: m, tape: tp, forkCall: -1, onDiv: func(d *Divergence) { div = d }, fallback: newLive(nil, RunOptions{})}
	x := absExchange(httptest.NewRequest("GET", up.URL+"/v1/search?q=new", nil))
	w := httptest.NewRecorder()
	a := tb.respond(w, x)
	a.finish(w)
	if !a.live || w.Body.String() != "live /v1/search?q=new" || hits.Load() != 1 || div == nil {
		t.Fatalf("live %v, answer %q, hits %d, divergence %v", a.live, w.Body, hits.Load(), div)
	}
}

// absExchange is a request to an absolute URL as the forward proxy
// makes it: plain HTTP to the host the agent named.
func absExchange(r *http.Request) *exchange {
	return &exchange{path: r.URL.Path, rest: r.URL.Path, query: r.URL.RawQuery, scheme: r.URL.Scheme,
		host: r.URL.Host, req: r, plain: true}
}
