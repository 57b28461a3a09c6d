package engine

import (
	"io"
	"net/http"
	"net/http/httptest"
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
