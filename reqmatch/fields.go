package reqmatch

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Rules name a query parameter or a header field, rather than a body
// field, with these prefixes: "query:api-version", "header:range". The
// colon keeps them apart from body paths (a body whose top-level key is
// "query" is common); a body key that starts so is written with a
// backslash before its colon ("query\:x").
const (
	QueryPrefix  = "query:"
	HeaderPrefix = "header:"
)

// ComparedHeaders are the header fields matching compares on requests
// that are not model calls: those that choose which bytes the answer
// holds (a download resumed at another offset must not be served the
// recorded range). Model calls compare no header.
var ComparedHeaders = []string{"Range"}

// fieldRule splits an ignore rule into what it names: "query" or "header"
// and the name, or "" for a body path.
func fieldRule(p string) (where, name string) {
	if n, ok := strings.CutPrefix(p, QueryPrefix); ok {
		return "query", n
	}
	if n, ok := strings.CutPrefix(p, HeaderPrefix); ok {
		return "header", http.CanonicalHeaderKey(n)
	}
	return "", p
}

// compileField readies an ignore rule that names a query parameter or a
// header field, reporting whether p is one.
func (r *Rules) compileField(p string) (bool, error) {
	where, name := fieldRule(p)
	switch {
	case where == "":
		return false, nil
	case name == "":
		return true, fmt.Errorf("ignore %q: no name after %q (query:NAME, header:NAME, query:* for every parameter)", p, where+":")
	case where == "query":
		r.query[name] = true
	default:
		r.header[name] = true
	}
	return true, nil
}

// Query is the canonical form of a raw query string: its parameters sorted
// by name, each name's values in their order, those the rules leave out
// dropped ("query:NAME", "query:*" for all) and every value scrubbed. A
// query that does not parse is compared as it is, scrubbed.
func (r *Rules) Query(raw string) string {
	if raw == "" || r.query["*"] {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return r.scrubString(raw)
	}
	for k, vs := range q {
		if r.query[k] {
			q.Del(k)
			continue
		}
		for i, v := range vs {
			vs[i] = r.scrubString(v)
		}
	}
	return q.Encode()
}

// Headers is the canonical form of the header fields names (those the
// rules do not leave out) of h: "Name: value" lines in the order of
// names, values scrubbed; "" when h has none of them.
func (r *Rules) Headers(h http.Header, names []string) string {
	var b strings.Builder
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		if r.header[n] || r.header["*"] {
			continue
		}
		for _, v := range h.Values(n) {
			fmt.Fprintf(&b, "%s: %s\n", n, r.scrubString(v))
		}
	}
	return b.String()
}

// FieldRules are the ignore rules of r that name query parameters or
// header fields, as given.
func (r *Rules) FieldRules() []string {
	var out []string
	for _, p := range r.Ignore {
		if where, _ := fieldRule(p); where != "" {
			out = append(out, p)
		}
	}
	return out
}

// FirstQueryDiff names the first query parameter, in name order, whose
// values differ between two canonical queries (Query), as a rule would
// name it ("query:api-version"); "" when they are equal.
func FirstQueryDiff(recorded, live string) string {
	if recorded == live {
		return ""
	}
	a, errA := url.ParseQuery(recorded)
	b, errB := url.ParseQuery(live)
	if errA != nil || errB != nil {
		return QueryPrefix + "*"
	}
	for _, k := range unionKeys(a, b) {
		if strings.Join(a[k], "\x00") != strings.Join(b[k], "\x00") || len(a[k]) != len(b[k]) {
			return QueryPrefix + k
		}
	}
	return QueryPrefix + "*"
}
