package reqmatch

import (
	"net/http"
	"testing"
)

// TestQueryAndHeaderRules: queries compare parameter by parameter in any
// order; query:NAME and header:NAME leave one out; scrubs reach values;
// the first differing parameter is named as a rule would name it.
func TestQueryAndHeaderRules(t *testing.T) {
	r := Rules{Ignore: []string{"query:ts", "header:range"}, Scrub: []Scrub{{Pattern: `\d{4}-\d\d-\d\d`, With: "<date>"}}}
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	if a, b := r.Query("b=2&a=1&ts=9"), r.Query("a=1&b=2"); a != b || a != "a=1&b=2" {
		t.Errorf("Query: %q vs %q", a, b)
	}
	if got := r.Query("day=2026-12-04"); got != "day=%3Cdate%3E" {
		t.Errorf("scrubbed query %q", got)
	}
	h := http.Header{"Range": {"bytes=0-9"}, "Accept": {"x"}}
	if got := r.Headers(h, []string{"Range", "Accept"}); got != "Accept: x\n" {
		t.Errorf("Headers %q", got)
	}
	if got := FirstQueryDiff("api-version=1&b=2", "api-version=2&b=2"); got != "query:api-version" {
		t.Errorf("FirstQueryDiff %q", got)
	}
	if got := FirstQueryDiff("a=1", "a=1&purpose=x"); got != "query:purpose" {
		t.Errorf("FirstQueryDiff %q", got)
	}
	all := Rules{Ignore: []string{"query:*"}}
	if err := all.Compile(); err != nil || all.Query("a=1") != "" {
		t.Errorf("query:* %v %q", err, all.Query("a=1"))
	}
	if err := (&Rules{Ignore: []string{"query:"}}).Compile(); err == nil {
		t.Error("query: with no name compiled")
	}
	body := Rules{Ignore: []string{`query\:x`}}
	if err := body.Compile(); err != nil || len(body.paths) != 1 || body.paths[0][0] != "query:x" {
		t.Errorf("escaped body key: %v %v", err, body.paths)
	}
}
