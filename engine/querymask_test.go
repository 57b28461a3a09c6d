package engine

import (
	"net/http"
	"testing"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestReplayMatchesAMaskedQuery: the writer masks a known-format token in
// a query value, so a replay masks the live query the same way before it
// compares; a tape an earlier release wrote kept the value, and matches
// the live query as it is. A query that differs still diverges.
func TestReplayMatchesAMaskedQuery(t *testing.T) {
	const token = "sk-proj-AbCdEf0123456789AbCdEf0123456789"
	for _, c := range []struct {
		name, recorded string
	}{
		{"masked", "k=%5Bredacted%5D&page=2"},
		{"an earlier release's", "k=" + token + "&page=2"},
	} {
		tp := writeWorldTape(t, nil, []plainExchange{{
			req:  tapefmt.HTTPRequest{Scheme: "http", Host: "search.example.test", Method: "GET", Path: "/v1/search", Query: c.recorded},
			resp: tapefmt.HTTPResponse{Status: 203, Header: http.Header{"Content-Type": {"text/plain"}}},
			out:  []byte("found"),
		}})
		h, err := NewReplayHandler(tp, reqmatch.Default(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if w := serveOne(h, "GET", "http://search.example.test/v1/search?k="+token+"&page=2", ""); w.Code != 203 {
			t.Errorf("%s tape: the same query answered %d %s", c.name, w.Code, w.Body)
		}
		if w := serveOne(h, "GET", "http://search.example.test/v1/search?k="+token+"&page=3", ""); w.Code == 203 {
			t.Errorf("%s tape: another page was served the recorded answer", c.name)
		}
	}
}
