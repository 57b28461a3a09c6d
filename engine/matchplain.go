package engine

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// endpointKey groups requests for matching: method and path, and for
// plain HTTP the origin as well.
func endpointKey(method, scheme, host, path string, plain bool) string {
	if !plain {
		return method + " " + path
	}
	return method + " " + scheme + "://" + normHost(scheme, host) + path
}

// endpointName is a request's method and URL as a report names it.
func endpointName(method, scheme, host, path, query string) string {
	s := method + " "
	if host != "" {
		s += scheme + "://" + host
	}
	s += path
	if query != "" {
		s += "?" + query
	}
	return s
}

// normHost is host lower-cased, without the scheme's default port.
func normHost(scheme, host string) string {
	h := strings.ToLower(host)
	if scheme == "https" {
		return strings.TrimSuffix(h, ":443")
	}
	return strings.TrimSuffix(h, ":80")
}

// plainCall holds a recorded http.request in a Call: the fields of an
// llm.request it needs are the same.
func plainCall(p *tapefmt.HTTPRequest, seq uint64) *Call {
	return &Call{Plain: true, Seq: seq, Request: &tapefmt.LLMRequest{Call: p.ID, Method: p.Method, Path: p.Path,
		Query: p.Query, Header: p.Header, Body: p.Body, Size: p.Size, Conn: p.Conn, ConnSeq: p.ConnSeq,
		Scheme: p.Scheme, Host: p.Host}}
}

// plainResponse holds a recorded http.response in an llm.response.
func plainResponse(p *tapefmt.HTTPResponse) *tapefmt.LLMResponse {
	return &tapefmt.LLMResponse{Call: p.ID, Status: p.Status, Header: p.Header, Body: p.Body, Size: p.Size,
		Chunks: p.Chunks, Latency: p.Latency, Elapsed: p.Elapsed, Error: p.Error, Encoding: p.Encoding}
}

// head is the canonical form of the header fields matching compares:
// reqmatch.ComparedHeaders for plain HTTP, none for a model call.
func (m *Matcher) head(h http.Header, plain bool) string {
	if !plain {
		return ""
	}
	return m.rules.Headers(h, reqmatch.ComparedHeaders)
}

// sameHead reports whether a recorded call has the live request's query
// (query, canonical), origin and compared headers (head, canonical). A
// model call's host is compared only when both sides name one.
func (m *Matcher) sameHead(c *Call, r MatchRequest, query, head string) bool {
	if c.Request.Host != "" && r.Host != "" && normHost(c.Request.Scheme, c.Request.Host) != normHost(r.Scheme, r.Host) {
		return false
	}
	if c.Request.Query != r.Query && m.canonQuery(c) != query {
		return false
	}
	return m.head(c.Request.Header, c.Plain) == head
}

// canonQuery is a recorded call's canonical query, made once.
func (m *Matcher) canonQuery(c *Call) string {
	if c.query == nil {
		q := m.rules.Query(c.Request.Query)
		c.query = &q
	}
	return *c.query
}

// shape is a live request's canonical parts.
type shape struct {
	query, head string
	canon       []byte
}

// show writes a request's canonical parts for a report: the query as a
// first line ("?a=1&b=2"), the compared headers, then the body.
func (s shape) show() string {
	var b strings.Builder
	if s.query != "" {
		b.WriteString("?" + s.query + "\n")
	}
	b.WriteString(s.head)
	b.WriteString(pretty(s.canon))
	return b.String()
}

// divergence describes how r differs from next, the recorded call its
// endpoint expected (nil: none; the nearest recorded request is named).
func (m *Matcher) divergence(r MatchRequest, next *Call, live shape) *Divergence {
	d := &Divergence{Endpoint: endpointName(r.Method, r.Scheme, r.Host, r.Path, ""), Actual: live.show(), Frame: -1}
	if next == nil {
		d.Nearest = m.nearest(r)
		calls := m.calls[endpointKey(r.Method, r.Scheme, r.Host, r.Path, r.Plain)]
		d.Recorded = len(calls)
		key := tapefmt.HashOf(live.canon)
		for _, c := range calls {
			if m.canonKeyOf(c) == key && m.sameHead(c, r, live.query, live.head) {
				d.Again = true
				break
			}
		}
	} else {
		rec := shape{query: m.canonQuery(next), head: m.head(next.Request.Header, next.Plain), canon: m.canonical(next)}
		d.Frame, d.Expected = int64(next.Seq), rec.show()
		switch {
		case rec.query != live.query:
			d.Path = reqmatch.FirstQueryDiff(rec.query, live.query)
		case rec.head != live.head:
			d.Path = reqmatch.HeaderPrefix + "*"
		default:
			d.Path = reqmatch.FirstDiff(rec.canon, live.canon)
		}
	}
	d.Diff = divergenceDiff(d.Expected, d.Actual)
	return d
}

// nearest names the unused recorded request most like r: on its host
// first, then sharing the longest start of method and URL; "" when every
// recorded request was used.
func (m *Matcher) nearest(r MatchRequest) string {
	want := endpointName(r.Method, r.Scheme, r.Host, r.Path, r.Query)
	var best *Call
	bestScore := -1
	for _, cs := range m.calls {
		for _, c := range cs {
			if c.used {
				continue
			}
			q := c.Request
			score := commonPrefix(want, endpointName(q.Method, q.Scheme, q.Host, q.Path, q.Query))
			if r.Host != "" && normHost(q.Scheme, q.Host) == normHost(r.Scheme, r.Host) {
				score += 1 << 20
			}
			if score > bestScore || score == bestScore && c.Seq < best.Seq {
				best, bestScore = c, score
			}
		}
	}
	if best == nil {
		return ""
	}
	q := best.Request
	return endpointName(q.Method, q.Scheme, q.Host, q.Path, q.Query) + " (frame " + strconv.FormatUint(best.Seq, 10) + ")"
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// unmatchedFields are the rules naming query parameters or header fields
// (reqmatch.FieldRules) that no recorded request carries, each with the
// names the requests do carry there.
func (m *Matcher) unmatchedFields(rules []string) []reqmatch.Unmatched {
	query, header := map[string]bool{}, map[string]bool{}
	for _, cs := range m.calls {
		for _, c := range cs {
			q, _ := url.ParseQuery(c.Request.Query)
			for k := range q {
				query[k] = true
			}
			for k := range c.Request.Header {
				header[k] = true
			}
		}
	}
	var out []reqmatch.Unmatched
	for _, p := range rules {
		have, name := query, strings.TrimPrefix(p, reqmatch.QueryPrefix)
		if strings.HasPrefix(p, reqmatch.HeaderPrefix) {
			have, name = header, http.CanonicalHeaderKey(strings.TrimPrefix(p, reqmatch.HeaderPrefix))
		}
		if name != "*" && !have[name] || len(have) == 0 {
			out = append(out, reqmatch.Unmatched{Path: p, Near: slices.Sorted(maps.Keys(have))})
		}
	}
	return out
}
