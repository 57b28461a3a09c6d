package redact

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// A Masker scrubs what the user names secret (jukebox --redact), and the
// credentials the rules find in any text (anyText), from everything a
// writer puts on a tape: blobs (request and response bodies, file
// contents), process output, tool arguments and results, MCP messages.
// Each match becomes Redacted, whatever its length, so that a mask tells
// nothing of the secret and a rotated key of another length masks alike. A
// match inside a JSON string keeps the string valid (an escape is masked
// whole or not at all). In a streamed answer (Stream) matches are found in
// the text its events assemble. A nil Masker applies the rules only.
//
// The patterns are written on the tape (run.start `redact`), never what
// they matched, so that replay and fork can mask a live request the same
// way before they compare it with the tape.
type Masker struct {
	src []string
	res []*regexp.Regexp
}

// NewMasker compiles patterns (Go regexp syntax). An empty list is a nil
// Masker, which masks nothing.
func NewMasker(patterns []string) (*Masker, error) {
	var m Masker
	for _, p := range patterns {
		if p == "" || slices.Contains(m.src, p) {
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("redact pattern %q: %w", p, err)
		}
		if re.MatchString("") {
			return nil, fmt.Errorf("redact pattern %q matches the empty string", p)
		}
		if re.MatchString(Redacted) {
			return nil, fmt.Errorf("redact pattern %q matches the mask %s itself", p, Redacted)
		}
		m.src, m.res = append(m.src, p), append(m.res, re)
	}
	if len(m.src) == 0 {
		return nil, nil
	}
	return &m, nil
}

// Patterns are the masker's patterns, as given.
func (m *Masker) Patterns() []string {
	if m == nil {
		return nil
	}
	return slices.Clone(m.src)
}

// Mask returns b with every match masked; b itself when nothing matched,
// else a copy.
func (m *Masker) Mask(b []byte) []byte {
	return m.maskPatterns(maskRules(b))
}

// maskPatterns is Mask without the credential rules: m's patterns only.
func (m *Masker) maskPatterns(b []byte) []byte {
	for _, re := range m.patterns() {
		b = replaceAll(b, re, 0)
	}
	return b
}

// patterns are m's compiled patterns; none for a nil Masker.
func (m *Masker) patterns() []*regexp.Regexp {
	if m == nil {
		return nil
	}
	return m.res
}

// MaskString is Mask for a string.
func (m *Masker) MaskString(s string) string {
	if s == "" {
		return s
	}
	b := []byte(s)
	out := m.Mask(b)
	if len(out) == len(b) && &out[0] == &b[0] {
		return s // nothing matched (Mask returns b itself): no copy back
	}
	return string(out)
}

// MaskQuery masks the values of a raw query string as MaskString masks
// text (the credential rules and m's patterns, on each value decoded),
// and returns it encoded again; raw itself when nothing matched. A query
// that does not parse is masked as text.
func (m *Masker) MaskQuery(raw string) string {
	if raw == "" {
		return raw
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return m.MaskString(raw)
	}
	changed := false
	for _, vs := range q {
		for i, v := range vs {
			if mv := m.MaskString(v); mv != v {
				vs[i], changed = mv, true
			}
		}
	}
	if !changed {
		return raw
	}
	return q.Encode()
}

// MaskHeader masks the values of h in place as MaskString masks text.
func (m *Masker) MaskHeader(h http.Header) {
	for _, vs := range h {
		for i, v := range vs {
			vs[i] = m.MaskString(v)
		}
	}
}

// replace returns s with every match of the patterns replaced by Redacted.
func (m *Masker) replace(s string) string {
	for _, re := range m.patterns() {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// replaceAll replaces group g of every match of re in b (g 0: the match)
// with Redacted, widened to whole backslash escapes so that a JSON string
// stays valid. It returns b itself when nothing matched.
func replaceAll(b []byte, re *regexp.Regexp, g int) []byte {
	return replaceLocs(b, re.FindAllSubmatchIndex(b, -1), g)
}

// replaceLocs is replaceAll of the matches at locs (FindAllSubmatchIndex's).
func replaceLocs(b []byte, locs [][]int, g int) []byte {
	if len(locs) == 0 {
		return b
	}
	var out []byte
	prev := 0
	for _, l := range locs {
		from, to := l[2*g], l[2*g+1]
		if from < prev || from < 0 || string(b[from:to]) == Redacted {
			continue
		}
		from, to = widen(b, from, to)
		out = append(append(out, b[prev:from]...), Redacted...)
		prev = to
	}
	if out == nil {
		return b
	}
	return append(out, b[prev:]...)
}

// widen grows b[from:to] to whole backslash escapes (\n, \", \u00e9).
func widen(b []byte, from, to int) (int, int) {
	if backslashesBefore(b, from)%2 == 1 {
		from--
	}
	for i := from; i < to; i++ {
		if b[i] == '\\' {
			i = escapeEnd(b, i) - 1
			to = max(to, i+1)
		}
	}
	return from, to
}

// backslashesBefore counts the backslashes right before b[i].
func backslashesBefore(b []byte, i int) int {
	n := 0
	for i > 0 && b[i-1] == '\\' {
		n++
		i--
	}
	return n
}

// escapeEnd is the index after the escape that starts with the backslash
// at b[i]: \uXXXX is six bytes, any other two.
func escapeEnd(b []byte, i int) int {
	if i+1 < len(b) && b[i+1] == 'u' {
		return min(i+6, len(b))
	}
	return min(i+2, len(b))
}

// sql masks the statements of a booth transaction's database work.
func (m *Masker) sql(in []tapefmt.SQLSession) []tapefmt.SQLSession {
	out := slices.Clone(in)
	for i := range out {
		out[i].Statements = slices.Clone(out[i].Statements)
		for j := range out[i].Statements {
			out[i].Statements[j].SQL = m.MaskString(out[i].Statements[j].SQL)
		}
	}
	return out
}
