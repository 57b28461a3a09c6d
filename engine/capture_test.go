package engine_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/runca"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// searchKey is the planted secret of the tool calls: in a query string,
// an Authorization header and an api-key header. No tape may hold it.
const searchKey = "srch-PLANTED-5f3a9c1e77"

// startTool serves a search API (/api/search), a server-sent event
// stream (/stream) and a WebSocket echo (/echo) on loopback. Nothing it
// answers holds what it was sent, so a secret on a tape is jukebox's leak.
func startTool(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/search", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"results":["jukebox"],"q":%q}`, r.URL.Query().Get("q"))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/echo", wsEcho)
	mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://other.example/api/search?q=redirected", http.StatusFound)
	})
	mux.HandleFunc("/here", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/api/search?q=relative")
		w.WriteHeader(http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// captureRecord records argv with the hosts of routes sent to loopback
// servers, and checks its tape: whole, and free of the planted secrets
// and of the run's CA key.
func captureRecord(t *testing.T, argv []string, env []string, routes map[string]string) (*engine.Result, string, string) {
	t.Helper()
	tape := filepath.Join(t.TempDir(), "capture.jbx")
	var stdout, stderr bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: t.TempDir(), Env: append(cleanEnv(), env...), Stdout: &stdout, Stderr: &stderr, Routes: routes},
		Tape:       tape})
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if res.End.ExitCode != 0 {
		t.Fatalf("the agent exited %d\nstdout: %s\nstderr: %s", res.End.ExitCode, stdout.String(), stderr.String())
	}
	tapetest.Verify(t, tape)
	noCAKey(t, tape)
	tapetest.NoSecrets(t, tape, searchKey, secretKey)
	return res, tape, stdout.String()
}

// noCAKey fails if the tape holds any run CA's private key: as DER, as
// PEM, or as the base64 of its first PEM line.
func noCAKey(t *testing.T, tape string) {
	t.Helper()
	keys := engine.RunCAKeys()
	if len(keys) == 0 {
		t.Fatal("no run CA was made")
	}
	var secrets []string
	for _, der := range keys {
		p := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		secrets = append(secrets, string(der), p, base64.StdEncoding.EncodeToString(der)[:60])
	}
	tapetest.NoSecrets(t, tape, secrets...)
}

// httpCall is one http.request on a tape with its answer.
type httpCall struct {
	req  *tapefmt.HTTPRequest
	resp *tapefmt.HTTPResponse
	body []byte // the response body
}

// httpCalls reads the http.* frames of a tape, and its net.conn frames.
func httpCalls(t *testing.T, tape string) ([]httpCall, []*tapefmt.NetConn) {
	t.Helper()
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var calls []httpCall
	var conns []*tapefmt.NetConn
	byID := map[uint64]int{}
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		switch p := p.(type) {
		case *tapefmt.HTTPRequest:
			byID[p.ID] = len(calls)
			calls = append(calls, httpCall{req: p})
		case *tapefmt.HTTPResponse:
			c := &calls[byID[p.ID]]
			c.resp = p
			if !p.Body.IsZero() {
				if c.body, err = tp.Blob(p.Body); err != nil {
					t.Fatal(err)
				}
			}
		case *tapefmt.NetConn:
			conns = append(conns, p)
		}
	}
	return calls, conns
}

// wantSearch checks that calls hold n answered searches of
// scheme://search.example.
func wantSearch(t *testing.T, calls []httpCall, scheme string, n int) {
	t.Helper()
	got := 0
	for _, c := range calls {
		if c.req.Host == "search.example" && c.req.Scheme == scheme && c.req.Path == "/api/search" && c.resp != nil &&
			c.resp.Status == 200 && strings.Contains(string(c.body), `"results":["jukebox"]`) {
			got++
		}
	}
	if got != n {
		t.Errorf("%d answered %s searches on the tape, want %d; calls:", got, scheme, n)
		for _, c := range calls {
			t.Logf("  %+v -> %+v %q", *c.req, c.resp, c.body)
		}
	}
}

// TestCaptureCurl: curl's HTTPS (a CONNECT tunnel, HTTP/2 inside) and
// plain HTTP requests, to a host the agent names, are recorded as http
// frames, and a server-sent event stream with its chunks' timing.
func TestCaptureCurl(t *testing.T) {
	t.Parallel()
	tool := startTool(t)
	script := `set -e
curl -sSf "https://search.example/api/search?q=curl&key=$SEARCH_KEY" -H "Authorization: Bearer $SEARCH_KEY"
curl -sSf "http://search.example/api/search?q=curl" -H "api-key: $SEARCH_KEY"
curl -sSfN https://search.example/stream`
	res, tape, out := captureRecord(t, []string{"sh", "-c", script}, []string{"SEARCH_KEY=" + searchKey},
		map[string]string{"search.example": tool.URL})
	if res.HTTPRequests != 3 || res.Calls != 0 {
		t.Errorf("result: %d http requests, %d model calls; want 3 and 0", res.HTTPRequests, res.Calls)
	}
	if strings.Count(out, `"results":["jukebox"]`) != 2 || !strings.Contains(out, "data: 2") {
		t.Fatalf("curl printed %q", out)
	}
	calls, _ := httpCalls(t, tape)
	wantSearch(t, calls, "https", 1)
	wantSearch(t, calls, "http", 1)
	streamed := false
	for _, c := range calls {
		if c.req.Path == "/stream" && c.resp != nil && c.resp.Size > 0 && len(c.resp.Chunks) > 0 {
			streamed = true
		}
	}
	if !streamed {
		t.Error("the event stream is not on the tape with its chunks")
	}
}

// TestCapturePython: Python's urllib and httpx (the proxy variables and
// SSL_CERT_FILE) are recorded.
func TestCapturePython(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePythonModule(t, "httpx")
	tool := startTool(t)
	script := `import os, urllib.request, httpx
k = os.environ["SEARCH_KEY"]
r = urllib.request.urlopen(urllib.request.Request("https://search.example/api/search?q=urllib&key=" + k, headers={"Authorization": "Bearer " + k}))
print("urllib", r.status, r.read().decode())
with httpx.Client() as c:
    r = c.get("https://search.example/api/search", params={"q": "httpx", "api_key": k}, headers={"api-key": k})
    print("httpx", r.status_code, r.text)
`
	_, tape, out := captureRecord(t, []string{py, "-c", script}, []string{"SEARCH_KEY=" + searchKey},
		map[string]string{"search.example": tool.URL})
	if !strings.Contains(out, "urllib 200") || !strings.Contains(out, "httpx 200") {
		t.Fatalf("the agent printed %q", out)
	}
	calls, _ := httpCalls(t, tape)
	wantSearch(t, calls, "https", 2)
}

// TestCaptureNodeFetch: Node's built-in fetch, which ignores the proxy
// variables, is recorded through the preload.
func TestCaptureNodeFetch(t *testing.T) {
	t.Parallel()
	testenv.RequireNode(t)
	tool := startTool(t)
	script := `const k = process.env.SEARCH_KEY;
const r = await fetch("https://search.example/api/search?q=fetch&key=" + k, { headers: { authorization: "Bearer " + k } });
console.log("fetch", r.status, await r.text());`
	_, tape, out := captureRecord(t, []string{"node", "--input-type=module", "-e", script}, []string{"SEARCH_KEY=" + searchKey},
		map[string]string{"search.example": tool.URL})
	if !strings.Contains(out, "fetch 200") {
		t.Fatalf("the agent printed %q", out)
	}
	calls, _ := httpCalls(t, tape)
	wantSearch(t, calls, "https", 1)
}

// TestCaptureNodeSDKs: the official openai and anthropic Node SDKs, given
// their public base URLs explicitly (which no base URL variable
// overrides), are recorded as model calls with their origin, and a plain
// tool call between two model calls as http frames.
func TestCaptureNodeSDKs(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	model := startModel(t, nil)
	tool := startTool(t)
	_, tape, out := captureRecord(t, []string{"node", filepath.Join(agents, "forward_agent.mjs")},
		[]string{"SEARCH_KEY=" + searchKey, "OPENAI_API_KEY=" + secretKey, "ANTHROPIC_API_KEY=" + secretKey},
		map[string]string{"api.openai.com": model.URL(), "api.anthropic.com": model.URL(), "search.example": tool.URL})
	for _, want := range []string{"openai: ", "search: 200", "anthropic: ", "stream: "} {
		if !strings.Contains(out, want) {
			t.Fatalf("the agent printed %q, without %q", out, want)
		}
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var seq []string
	for f, err := range tp.Frames(tapefmt.KindLLMRequest, tapefmt.KindHTTPRequest) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			seq = append(seq, p.Provider+" "+p.Scheme+"://"+p.Host+p.Path)
		case *tapefmt.HTTPRequest:
			seq = append(seq, "http "+p.Scheme+"://"+p.Host+p.Path)
		}
	}
	want := []string{"openai https://api.openai.com/v1/chat/completions", "http https://search.example/api/search",
		"anthropic https://api.anthropic.com/v1/messages", "openai https://api.openai.com/v1/chat/completions"}
	if got, _ := json.Marshal(seq); string(got) != mustJSON(want) {
		t.Errorf("the tape's requests are\n%s\nwant\n%s", got, mustJSON(want))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestCaptureFetchRedirect: a redirect to another host, which fetch
// follows itself, goes through jukebox too. The agent's code sees the
// URLs and Locations it would see without jukebox: r.url was jukebox's
// http://127.0.0.1:PORT/_jbx/https/other.example/..., a new port each run
// (a crawler resolved its links against it and reached jukebox, 404), and
// a redirect not followed said Location /_jbx/... where the server said
// /api/search?q=relative.
func TestCaptureFetchRedirect(t *testing.T) {
	t.Parallel()
	testenv.RequireNode(t)
	tool := startTool(t)
	script := `import http from "node:http";
const r = await fetch("https://search.example/go");
console.log("fetch", r.status, r.url, r.redirected, r.clone().url === r.url, r.clone().clone().url === r.url);
const m = await fetch("https://search.example/here", { redirect: "manual" });
console.log("manual", m.status, m.headers.get("location"), m.headers.has("x-jukebox-location"), m.url, m.clone().url === m.url, m.type);
const n = await fetch(new URL(m.headers.get("location"), m.url));
console.log("next", n.status, n.url);
await new Promise((done) => http.get("http://search.example/here", (res) => {
  console.log("http", res.statusCode, res.headers.location, "x-jukebox-location" in res.headers, res.rawHeaders.includes("/api/search?q=relative"));
  res.resume(); res.on("end", done);
}));`
	_, tape, out := captureRecord(t, []string{"node", "--input-type=module", "-e", script}, nil,
		map[string]string{"search.example": tool.URL, "other.example": tool.URL})
	want := "fetch 200 https://other.example/api/search?q=redirected true true true\n" +
		"manual 302 /api/search?q=relative false https://search.example/here true basic\n" +
		"next 200 https://search.example/api/search?q=relative\n" +
		"http 302 /api/search?q=relative false true\n"
	if out != want {
		t.Fatalf("the agent printed\n%s\nwant\n%s", out, want)
	}
	calls, _ := httpCalls(t, tape)
	if len(calls) != 5 || calls[0].resp.Status != http.StatusFound || calls[1].req.Host != "other.example" || calls[1].resp.Status != 200 {
		t.Fatalf("calls on the tape: %+v", calls)
	}
}

// TestCaptureUserProxy: the user's own HTTP_PROXY carries jukebox's
// upstream requests, and the user's NO_PROXY entries are jukebox's alone:
// the agent's NO_PROXY names only jukebox's endpoints.
func TestCaptureUserProxy(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	user := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"results":["jukebox"],"q":"via user proxy"}`)
	}))
	t.Cleanup(user.Close)
	env := []string{"HTTP_PROXY=" + user.URL, "NO_PROXY=internal.example", "no_proxy=internal.example"}
	_, tape, out := captureRecord(t, []string{"sh", "-c", `curl -sSf http://search.example/api/search?q=x; echo; echo "no_proxy=$NO_PROXY"`}, env, nil)
	if !strings.Contains(out, "via user proxy") || strings.Contains(out, "internal.example") || !strings.Contains(out, "no_proxy=127.0.0.1:") {
		t.Fatalf("the agent printed %q", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET http://search.example/api/search?q=x" {
		t.Fatalf("the user's proxy saw %q", seen)
	}
	calls, _ := httpCalls(t, tape)
	wantSearch(t, calls, "http", 1)
}

// TestCaptureUpstreamCA: upstream TLS is verified, against the roots
// given (--upstream-ca) when there are some: a server the roots do not
// vouch for is never sent the request.
func TestCaptureUpstreamCA(t *testing.T) {
	t.Parallel()
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":["jukebox"]}`)
	}))
	t.Cleanup(tls.Close)
	roots := x509.NewCertPool()
	roots.AddCert(tls.Certificate())
	routes := map[string]string{"search.example": tls.URL}
	for _, c := range []struct {
		name  string
		roots *x509.CertPool
		want  int
	}{{"given roots", roots, 200}, {"system roots", nil, 0}} {
		t.Run(c.name, func(t *testing.T) {
			tape := filepath.Join(t.TempDir(), "ca.jbx")
			var out bytes.Buffer
			_, err := engine.Record(context.Background(), engine.RecordOptions{
				RunOptions: engine.RunOptions{Argv: []string{"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "https://search.example/api/search"},
					Env: cleanEnv(), Stdout: &out, Stderr: io.Discard, Routes: routes, UpstreamRoots: c.roots},
				Tape: tape})
			if err != nil {
				t.Fatal(err)
			}
			calls, _ := httpCalls(t, tape)
			if len(calls) != 1 || calls[0].resp == nil {
				t.Fatalf("calls: %+v", calls)
			}
			if r := calls[0].resp; r.Status != c.want || (c.want == 0 && !strings.Contains(r.Error, "certificate")) {
				t.Errorf("status %d, error %q; want %d (curl printed %s)", r.Status, r.Error, c.want, out.String())
			}
		})
	}
}

// TestCaptureTLSRefused: a client that does not trust the run's CA (as
// one that pins certificates) fails visibly: no request is made, and the
// result counts the connection and names its host.
func TestCaptureTLSRefused(t *testing.T) {
	t.Parallel()
	tool := startTool(t)
	other, err := runca.New()
	if err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(t.TempDir(), "pinned.pem")
	if err := os.WriteFile(pinned, other.CertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "pinned.jbx")
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"curl", "-sS", "--cacert", pinned, "https://search.example/api/search"},
			Env: cleanEnv(), Stdout: io.Discard, Stderr: io.Discard, Routes: map[string]string{"search.example": tool.URL}},
		Tape: tape})
	if err != nil {
		t.Fatal(err)
	}
	if res.End.ExitCode == 0 || res.TLSFailed != 1 || !strings.HasPrefix(res.TLSError, "search.example:443: ") {
		t.Errorf("exit %d, tls_failed %d, tls_error %q", res.End.ExitCode, res.TLSFailed, res.TLSError)
	}
	if calls, _ := httpCalls(t, tape); len(calls) != 0 {
		t.Errorf("a request was made: %+v", calls)
	}
}
