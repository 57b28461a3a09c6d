package engine

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestBoothAgentKeptOffHostLocal: in the booth, a forwarded request to
// this machine's own addresses is refused unless a route names the host;
// outside it, it goes where the agent asked.
func TestBoothAgentKeptOffHostLocal(t *testing.T) {
	booth := newLive(nil, RunOptions{Booth: &BoothOptions{}, Routes: map[string]string{"localhost:9": "http://127.0.0.1:9"}})
	plain := newLive(nil, RunOptions{})
	for _, c := range []struct {
		host    string
		refused bool
	}{{"127.0.0.1:5432", true}, {"[::1]:80", true}, {"localhost", true}, {"db.localhost:1", true}, {"0.0.0.0:8080", true},
		{"localhost:9", false}, {"api.openai.com", false}, {"10.0.0.1", false}} {
		_, err := booth.base(&exchange{scheme: "http", host: c.host})
		if (err != nil) != c.refused || (err != nil && !strings.Contains(err.Error(), c.host)) {
			t.Errorf("booth, %s: err %v, want refused %v", c.host, err, c.refused)
		}
		if _, err := plain.base(&exchange{scheme: "http", host: c.host}); err != nil {
			t.Errorf("no booth, %s: %v", c.host, err)
		}
	}
}

// TestPathFormLocation: redirects of a path-form request stay on the path
// form.
func TestPathFormLocation(t *testing.T) {
	for loc, want := range map[string]string{
		"https://b.example/x?y=1": "/_jbx/https/b.example/x?y=1",
		"//b.example/x":           "/_jbx/https/b.example/x",
		"/x":                      "/_jbx/https/a.example/x",
		"x/y":                     "x/y",
		"ftp://b.example/x":       "ftp://b.example/x",
	} {
		if got := pathFormLocation(loc, "https", "a.example"); got != want {
			t.Errorf("%s: got %s, want %s", loc, got, want)
		}
	}
}

// TestRelayTrailers: an answer's trailers (gRPC's status) reach the agent.
func TestRelayTrailers(t *testing.T) {
	resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("hi")),
		Trailer: http.Header{"Grpc-Status": {"0"}}, ContentLength: -1}
	w := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/x", nil)
	relay(w, &exchange{plain: true, req: req, start: time.Now()}, resp)
	if got := w.Result().Trailer.Get("Grpc-Status"); got != "0" || w.Body.String() != "hi" {
		t.Errorf("trailer %q, body %q", got, w.Body.String())
	}
}

// TestBoothAgentKeptOffHostByAddress: a name that resolves to this
// machine (its own host name) or one of its interfaces' addresses given
// as is reaches none of the host's services through a booth's proxy,
// though the name check lets them by; a run outside the booth reaches
// them.
func TestBoothAgentKeptOffHostByAddress(t *testing.T) {
	ln, err := net.Listen("tcp", ":0") // every interface, as a local service may
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "local service") })}
	go srv.Serve(ln)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	var hosts []string
	if name, err := os.Hostname(); err == nil {
		if ips, err := net.LookupHost(name); err == nil && len(ips) > 0 {
			hosts = append(hosts, net.JoinHostPort(name, port))
		}
	}
	for ip := range ownAddrs() {
		if p := net.ParseIP(ip); p.To4() != nil && !p.IsLoopback() {
			hosts = append(hosts, net.JoinHostPort(ip, port))
		}
	}
	if len(hosts) == 0 {
		t.Fatal("this machine has neither a host name that resolves nor an interface address besides loopback")
	}
	booth := newLive(nil, RunOptions{Booth: &BoothOptions{}})
	plain := newLive(nil, RunOptions{})
	for _, h := range hosts {
		ask := func(l *live) (*httptest.ResponseRecorder, answer) {
			w := httptest.NewRecorder()
			x := &exchange{scheme: "http", host: h, path: "/", rest: "/", plain: true,
				req: httptest.NewRequest("GET", "http://"+h+"/", nil), start: time.Now()}
			a := l.respond(w, x)
			a.finish(w)
			return w, a
		}
		if w, a := ask(booth); w.Body.String() == "local service" || !strings.Contains(a.resp.Error, "may not reach this machine's own address") {
			t.Errorf("booth, %s: answered %q, error %q", h, w.Body.String(), a.resp.Error)
		}
		if w, _ := ask(plain); w.Body.String() != "local service" {
			t.Errorf("no booth, %s: answered %q", h, w.Body.String())
		}
	}
}

// TestUserAllProxy: the user's ALL_PROXY carries jukebox's upstream
// requests when HTTPS_PROXY or HTTP_PROXY does not name one, and their
// NO_PROXY still applies.
func TestUserAllProxy(t *testing.T) {
	f := userProxy([]string{"ALL_PROXY=socks5://127.0.0.1:1080", "HTTP_PROXY=http://127.0.0.1:3128", "NO_PROXY=internal.example"})
	for u, want := range map[string]string{
		"https://api.example.com/x": "socks5://127.0.0.1:1080",
		"http://api.example.com/x":  "http://127.0.0.1:3128",
		"https://internal.example/": "",
	} {
		got, err := f(httptest.NewRequest("GET", u, nil))
		if err != nil || (got == nil) != (want == "") || (got != nil && got.String() != want) {
			t.Errorf("%s: proxy %v, %v; want %q", u, got, err, want)
		}
	}
}
