package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// A Masker scrubs what the user names secret (jukebox --redact) from
// everything a writer puts on a tape: blobs (request and response bodies,
// file contents), process output, tool arguments and results, MCP
// messages. Each match is masked in place: its letters, digits and
// non-ASCII bytes become '*', while punctuation, white space and JSON
// escapes stay. The length and the structure are kept, so a masked body is
// still valid JSON or server-sent events, its streamed chunks still end
// where they did, and sizes still add up. Matches are found in the bytes
// as written (a compressed body is not decoded first).
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
	if m == nil {
		return b
	}
	out, copied := b, false
	for _, re := range m.res {
		locs := re.FindAllIndex(out, -1)
		if len(locs) == 0 {
			continue
		}
		if !copied {
			out, copied = bytes.Clone(b), true
		}
		for _, l := range locs {
			maskRange(out, l[0], l[1])
		}
	}
	return out
}

// MaskString is Mask for a string.
func (m *Masker) MaskString(s string) string {
	if m == nil || s == "" {
		return s
	}
	return string(m.Mask([]byte(s)))
}

// replace returns s with every match replaced by Redacted.
func (m *Masker) replace(s string) string {
	for _, re := range m.res {
		s = re.ReplaceAllLiteralString(s, Redacted)
	}
	return s
}

// maskRange masks b[from:to]: letters, digits and bytes of multi-byte
// characters become '*'; the rest stays, and so does a backslash escape
// (\n, \", \u00e9), in full, so that JSON strings stay valid.
func maskRange(b []byte, from, to int) {
	i := from
	// A match that starts inside an escape: skip to its end.
	if n := backslashesBefore(b, from); n%2 == 1 {
		i = escapeEnd(b, from-1)
	}
	for i < to {
		c := b[i]
		switch {
		case c == '\\':
			i = escapeEnd(b, i)
			continue
		case c >= 0x80, c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			b[i] = '*'
		}
		i++
	}
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
