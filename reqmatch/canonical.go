package reqmatch

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"mime"
	"mime/multipart"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Canonical returns the form of a request body that matching compares,
// given its Content-Type: for JSON, the value with its keys sorted,
// numbers as written, the ignored fields left out and every string
// scrubbed; for a multipart body, its parts in order as a JSON array of
// {name, filename, content_type, body} (the boundary left out); for a
// form, its fields as a JSON object of sorted value lists. Ignore paths
// apply to those JSON forms too ("form.stamp", "multipart.*.filename"). A
// body none of these parse is compared as its bytes, scrubbed.
func (r *Rules) Canonical(contentType string, body []byte) []byte {
	v, ok := Structure(contentType, body)
	if !ok {
		return r.scrubBytes(body)
	}
	for _, p := range r.paths {
		v = leaveOut(v, p)
	}
	if len(r.Scrub) > 0 {
		v = r.scrubValue(v)
	}
	return marshal(v)
}

// Structure decodes a body into the value Canonical compares, reporting
// whether it could.
func Structure(contentType string, body []byte) (any, bool) {
	mt, params, _ := mime.ParseMediaType(contentType)
	switch {
	case strings.HasPrefix(mt, "multipart/") && params["boundary"] != "":
		v, err := multipartValue(body, params["boundary"])
		return v, err == nil
	case mt == "application/x-www-form-urlencoded":
		q, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, false
		}
		form := map[string]any{}
		for k, vs := range q {
			list := make([]any, len(vs))
			for i, s := range vs {
				list[i] = s
			}
			form[k] = list
		}
		return map[string]any{"form": form}, true
	}
	v, err := decodeJSON(body)
	return v, err == nil
}

// multipartValue is a multipart body as {"multipart": [part, ...]}.
func multipartValue(body []byte, boundary string) (any, error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var parts []any
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, err
		}
		part := map[string]any{"name": p.FormName(), "body": text(b)}
		if fn := p.FileName(); fn != "" {
			part["filename"] = fn
		}
		if ct := p.Header.Get("Content-Type"); ct != "" {
			part["content_type"] = ct
		}
		parts = append(parts, part)
	}
	if parts == nil {
		return nil, errors.New("no parts")
	}
	return map[string]any{"multipart": parts}, nil
}

// text is b as a string when it is UTF-8, else base64 with a prefix that
// says so.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

// leaveOut removes the fields at path from v: keys are deleted, array
// elements become null. It returns v (changed in place where it can be).
func leaveOut(v any, path []string) any {
	seg, last := path[0], len(path) == 1
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if seg != "*" && seg != k {
				continue
			}
			if last {
				delete(x, k)
			} else {
				x[k] = leaveOut(child, path[1:])
			}
		}
	case []any:
		for i, child := range x {
			if seg != "*" && seg != strconv.Itoa(i) {
				continue
			}
			if last {
				x[i] = nil
			} else {
				x[i] = leaveOut(child, path[1:])
			}
		}
	}
	return v
}

// scrubValue applies the scrubs to every string in v.
func (r *Rules) scrubValue(v any) any {
	switch x := v.(type) {
	case string:
		return r.scrubbed.get(x, r.scrubString)
	case map[string]any:
		for k, child := range x {
			x[k] = r.scrubValue(child)
		}
	case []any:
		for i, child := range x {
			x[i] = r.scrubValue(child)
		}
	}
	return v
}

func (r *Rules) scrubString(x string) string {
	for _, s := range r.Scrub {
		x = s.re.ReplaceAllLiteralString(x, s.With) // x itself when nothing matches
	}
	return x
}

// memo remembers scrubbed strings: a conversation resends its history with
// every call, so most strings of a body were scrubbed for an earlier one.
// It holds up to memoBytes of keys and values, then starts again.
type memo struct {
	mu   sync.Mutex
	m    map[string]string
	size int
}

const memoBytes = 16 << 20

func (c *memo) get(x string, f func(string) string) string {
	if len(x) < 16 {
		return f(x) // the map costs more than it saves
	}
	c.mu.Lock()
	y, ok := c.m[x]
	c.mu.Unlock()
	if ok {
		return y
	}
	y = f(x)
	c.mu.Lock()
	if c.m == nil || c.size+len(x)+len(y) > memoBytes {
		c.m, c.size = map[string]string{}, 0
	}
	c.m[x] = y
	c.size += len(x) + len(y)
	c.mu.Unlock()
	return y
}

func (r *Rules) scrubBytes(b []byte) []byte {
	for _, s := range r.Scrub {
		b = s.re.ReplaceAllLiteral(b, []byte(s.With))
	}
	return b
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// marshal writes v as JSON with map keys sorted and no HTML escaping.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Paths reports which of the field paths given match nothing in any of
// the bodies (each with its Content-Type): a rule that can never apply is
// most likely a typo. For each, it also names the keys found where the
// path stopped matching, to suggest the right one. The bodies are taken
// one at a time, each decoded once, until every path matched one (a long
// run's requests are many times its tape's size).
func Paths(paths []string, bodies iter.Seq2[Body, error]) (unmatched []Unmatched, err error) {
	type want struct {
		segs  []string
		u     Unmatched
		found bool
	}
	ws := make([]want, len(paths))
	for i, p := range paths {
		segs, err := ParsePath(p)
		if err != nil {
			return nil, err
		}
		ws[i] = want{segs: segs, u: Unmatched{Path: p}}
	}
	left := len(ws)
	if left == 0 {
		return nil, nil
	}
	for b, err := range bodies {
		if err != nil {
			return nil, err
		}
		if v, ok := Structure(b.ContentType, b.Data); ok {
			for i := range ws {
				if !ws[i].found && reach(v, ws[i].segs, &ws[i].u.Near) {
					ws[i].found = true
					left--
				}
			}
		}
		if left == 0 {
			break
		}
	}
	for _, w := range ws {
		if !w.found {
			sort.Strings(w.u.Near)
			unmatched = append(unmatched, w.u)
		}
	}
	return unmatched, nil
}

// Body is a request body and its Content-Type.
type Body struct {
	ContentType string
	Data        []byte
}

// Unmatched is a field path that matched nothing, with the keys that
// were there where it stopped matching.
type Unmatched struct {
	Path string
	Near []string
}

// reach reports whether path names something in v; where it does not,
// it adds to near the keys present at the deepest level it reached.
func reach(v any, path []string, near *[]string) bool {
	if len(path) == 0 {
		return true
	}
	seg := path[0]
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if (seg == "*" || seg == k) && reach(child, path[1:], near) {
				return true
			}
		}
		if seg != "*" {
			if _, ok := x[seg]; !ok {
				for k := range x {
					if !contains(*near, k) {
						*near = append(*near, k)
					}
				}
			}
		}
	case []any:
		for i, child := range x {
			if (seg == "*" || seg == strconv.Itoa(i)) && reach(child, path[1:], near) {
				return true
			}
		}
	}
	return false
}
