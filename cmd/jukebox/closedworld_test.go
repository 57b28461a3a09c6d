package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// countingServer is a loopback upstream that counts the requests it saw.
func countingServer(t *testing.T, answer string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// plainTape writes a tape on which the agent made one plain GET to
// http://host/known, answered "recorded".
func plainTape(t *testing.T, host string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tool.jbx")
	must(t, tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"true"}, Mode: tapefmt.ModeRecord})
		body, err := w.PutBlob("resp", []byte("recorded"))
		if err != nil {
			return err
		}
		w.Append(0, tapefmt.HTTPRequest{Scheme: "http", Host: host, Method: "GET", Path: "/known"})
		w.Append(0, tapefmt.HTTPResponse{Status: 200, Body: body, Size: 8})
		_, err = w.Append(0, tapefmt.RunEnd{})
		return err
	}))
	return path
}

// viaProxy is a shell agent that fetches each URL through jukebox as its
// HTTP proxy (the proxy variables' way), printing the answers.
func viaProxy(urls ...string) string {
	var b strings.Builder
	b.WriteString(`p="${JUKEBOX_CONTROL%/_jukebox}"; `)
	for _, u := range urls {
		b.WriteString(`curl -s --noproxy '' -x "$p" '` + u + `'; echo; `)
	}
	return b.String()
}

// TestReplayClosedWorldExit5: in replay, a plain request the tape does not
// hold never leaves the machine: the upstream sees nothing, replay exits
// 5 and names the method, host and path, and the nearest recorded request.
// The recorded one is served from the tape. It went unanswered, and
// replay exited 0, before.
func TestReplayClosedWorldExit5(t *testing.T) {
	srv, hits := countingServer(t, "live")
	host := strings.TrimPrefix(srv.URL, "http://")
	tape := plainTape(t, host)
	_, errs := wantCode(t, ExitDiverged, "replay", tape, "--", "sh", "-c", viaProxy(srv.URL+"/unknown?x=1"))
	if hits.Load() != 0 {
		t.Fatalf("the upstream saw %d requests", hits.Load())
	}
	if !strings.Contains(errs, "GET http://"+host+"/unknown") || !strings.Contains(errs, "never called in the recording") ||
		!strings.Contains(errs, "nearest recorded request is GET http://"+host+"/known") {
		t.Fatalf("the report does not name the request and the nearest recorded one:\n%s", errs)
	}
	out, _ := wantCode(t, ExitOK, "replay", tape, "--", "sh", "-c", viaProxy(srv.URL+"/known"))
	if !strings.Contains(out, "recorded") || hits.Load() != 0 {
		t.Fatalf("the recorded request: agent printed %q, upstream hits %d", out, hits.Load())
	}
}

// TestReplayLiveHostGlob: --live lets exactly the hosts it names (a glob
// here) through live; a request to another host still diverges unsent.
func TestReplayLiveHostGlob(t *testing.T) {
	named, namedHits := countingServer(t, "live-named")
	other, otherHits := countingServer(t, "live-other")
	namedURL := strings.Replace(named.URL, "127.0.0.1", "localhost", 1)
	tape := plainTape(t, "tools.example.test")
	out, _ := wantCode(t, ExitOK, "replay", "--live", "local*", tape, "--", "sh", "-c", viaProxy(namedURL+"/fresh"))
	if !strings.Contains(out, "live-named") || namedHits.Load() != 1 {
		t.Fatalf("--live local*: agent printed %q, named host hits %d", out, namedHits.Load())
	}
	_, errs := wantCode(t, ExitDiverged, "replay", "--live", "local*", tape, "--", "sh", "-c", viaProxy(other.URL+"/fresh"))
	if otherHits.Load() != 0 || !strings.Contains(errs, "GET "+other.URL+"/fresh") {
		t.Fatalf("a host --live does not name: hits %d, report:\n%s", otherHits.Load(), errs)
	}
	_, errs = wantCode(t, ExitUsage, "replay", "--live", "[bad", tape)
	if !strings.Contains(errs, "--live") {
		t.Fatalf("a bad pattern: %s", errs)
	}
}

// TestReplayQueryIgnoreFlag: a model call whose ?api-version= differs
// from the recorded one diverges (exit 5, naming query:api-version);
// --ignore query:api-version replays it, and a typo in the name is exit 2.
func TestReplayQueryIgnoreFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "azure.jbx")
	must(t, tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"true"}, Mode: tapefmt.ModeRecord})
		req, _ := w.PutBlob("req", []byte(`{"model":"m"}`))
		resp, _ := w.PutBlob("resp", []byte(`{"id":"recorded"}`))
		w.Append(0, tapefmt.LLMRequest{Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Query: "api-version=2024-02-01",
			Header: http.Header{"Content-Type": {"application/json"}}, Body: req, Size: 13})
		_, err := w.Append(0, tapefmt.LLMResponse{Status: 200, Body: resp, Size: 17})
		return err
	}))
	agent := `curl -s -H 'Content-Type: application/json' -d '{"model":"m"}' "$OPENAI_BASE_URL/chat/completions?api-version=2024-06-01"`
	_, errs := wantCode(t, ExitDiverged, "replay", path, "--", "sh", "-c", agent)
	if !strings.Contains(errs, "query:api-version") || !strings.Contains(errs, "+?api-version=2024-06-01") {
		t.Fatalf("the report does not show the query:\n%s", errs)
	}
	wantCode(t, ExitUsage, "replay", "--ignore", "query:api-verison", path, "--", "sh", "-c", agent)
	out, _ := wantCode(t, ExitOK, "replay", "--ignore", "query:api-version", path, "--", "sh", "-c", agent)
	if !strings.Contains(out, "recorded") {
		t.Fatalf("agent printed %q", out)
	}
}
