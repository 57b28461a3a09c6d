// Package reqmatch decides when a live request is the one a tape
// recorded. It turns a request body into a canonical form under a run's
// rules: JSON with its keys sorted and numbers kept as written, fields left
// out by path (with wildcards), text scrubbed by regular expression on both
// sides, and multipart and form bodies compared part by part, whatever
// their boundary. It names the first field where two bodies differ. It does
// no I/O beyond reading and writing a rules file.
package reqmatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// DefaultIgnore are the top-level request fields left out of matching
// unless a run says otherwise: they change between runs without changing
// what the model is asked.
var DefaultIgnore = []string{"stream_options", "user", "metadata", "service_tier"}

// DefaultScrubWith replaces what a scrub pattern matches when no
// replacement is given.
const DefaultScrubWith = "<scrubbed>"

// Rules are a run's matching rules. The zero value compares bodies as
// canonical JSON with nothing left out.
type Rules struct {
	// Ignore lists field paths left out on both sides: keys separated by
	// dots, array positions as numbers, * for any one key or position
	// ("messages.*.content", "metadata.trace_id"). A key that holds a dot
	// is written with a backslash before it ("a\.b"). An array element
	// left out is compared as null, so the positions after it stay put.
	// "query:NAME" names a query parameter ("query:*" every one) and
	// "header:NAME" a header field (see ComparedHeaders), not a body path.
	Ignore []string `json:"ignore,omitempty"`
	// Scrub patterns are replaced in every string of the body (every part
	// of a multipart body, the whole body when it is not structured) on
	// both sides before they are compared.
	Scrub []Scrub `json:"scrub,omitempty"`

	paths    [][]string
	query    map[string]bool // query parameters left out (query:NAME)
	header   map[string]bool // header fields left out (header:NAME), canonical keys
	scrubbed *memo
}

// Scrub is one pattern (Go's regexp syntax, RE2) and its replacement.
type Scrub struct {
	Pattern string `json:"pattern"`
	With    string `json:"with"`
	re      *regexp.Regexp
}

// Compile checks the rules and readies them; Canonical needs it first.
// The error names the path or pattern at fault.
func (r *Rules) Compile() error {
	r.paths, r.query, r.header = nil, map[string]bool{}, map[string]bool{}
	for _, p := range r.Ignore {
		if field, err := r.compileField(p); field || err != nil {
			if err != nil {
				return err
			}
			continue
		}
		segs, err := ParsePath(p)
		if err != nil {
			return fmt.Errorf("ignore %q: %w", p, err)
		}
		r.paths = append(r.paths, segs)
	}
	for i := range r.Scrub {
		s := &r.Scrub[i]
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return fmt.Errorf("scrub %q: %w", s.Pattern, err)
		}
		if re.MatchString("") {
			return fmt.Errorf("scrub %q: matches the empty string, so it would scrub between every character", s.Pattern)
		}
		s.re = re
	}
	r.scrubbed = &memo{}
	return nil
}

// Merge returns r with the ignore paths and scrubs of more added after its
// own (duplicates dropped); it needs Compile again.
func (r Rules) Merge(more Rules) Rules {
	out := Rules{Ignore: append([]string(nil), r.Ignore...), Scrub: append([]Scrub(nil), r.Scrub...)}
	for _, p := range more.Ignore {
		if !contains(out.Ignore, p) {
			out.Ignore = append(out.Ignore, p)
		}
	}
	for _, s := range more.Scrub {
		dup := false
		for _, have := range out.Scrub {
			dup = dup || have.Pattern == s.Pattern && have.With == s.With
		}
		if !dup {
			out.Scrub = append(out.Scrub, Scrub{Pattern: s.Pattern, With: s.With})
		}
	}
	return out
}

// Empty reports whether the rules leave out and scrub nothing.
func (r Rules) Empty() bool { return len(r.Ignore) == 0 && len(r.Scrub) == 0 }

// Load reads rules from a JSON file ({"ignore": [...], "scrub": [{"pattern":
// ..., "with": ...}]}); unknown keys are an error, so a typo is not a rule
// silently dropped. A scrub without "with" uses DefaultScrubWith.
func Load(path string) (Rules, error) {
	var r Rules
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var raw struct {
		Ignore []string `json:"ignore"`
		Scrub  []struct {
			Pattern string  `json:"pattern"`
			With    *string `json:"with"`
		} `json:"scrub"`
	}
	if err := dec.Decode(&raw); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	r.Ignore = raw.Ignore
	for _, s := range raw.Scrub {
		with := DefaultScrubWith
		if s.With != nil {
			with = *s.With
		}
		r.Scrub = append(r.Scrub, Scrub{Pattern: s.Pattern, With: with})
	}
	if err := r.Compile(); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Save writes the rules to path as JSON, atomically (a temporary file
// renamed into place), making its folder if needed.
func (r Rules) Save(path string) error {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(Rules{Ignore: r.Ignore, Scrub: r.Scrub}); err != nil {
		return err
	}
	return sidecar.WriteFile(path, []byte(buf.String()))
}

// ParsePath splits a field path (keys separated by dots, array positions as
// numbers, a backslash escaping the next byte) into its segments.
func ParsePath(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("empty path")
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			cur.WriteByte(p[i])
		case c == '.':
			if cur.Len() == 0 {
				return nil, fmt.Errorf("empty key at byte %d (a path is keys separated by single dots)", i)
			}
			segs = append(segs, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() == 0 {
		return nil, errors.New("ends with a dot")
	}
	return append(segs, cur.String()), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Default returns the rules matching uses when a run gives none: the
// DefaultIgnore fields left out, nothing scrubbed.
func Default() *Rules {
	r := &Rules{Ignore: append([]string(nil), DefaultIgnore...)}
	r.Compile() // the defaults compile
	return r
}

// FileName is the rules file in a tape's sidecar folder (sidecar.Dir).
const FileName = "match.json"

// Remembered reads the rules kept in a tape's sidecar folder; without a
// rules file there it returns empty rules and no error.
func Remembered(sidecar string) (Rules, error) {
	r, err := Load(filepath.Join(sidecar, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return Rules{}, nil
	}
	return r, err
}

// Remember writes the rules into a tape's sidecar folder, for later
// replays and forks of that tape.
func (r Rules) Remember(sidecar string) error { return r.Save(filepath.Join(sidecar, FileName)) }

// FromTape returns the rules a tape keeps (run.start's match; nil: none),
// not yet compiled.
func FromTape(m *tapefmt.MatchRules) Rules {
	var r Rules
	if m == nil {
		return r
	}
	r.Ignore = append(r.Ignore, m.Ignore...)
	for _, s := range m.Scrub {
		r.Scrub = append(r.Scrub, Scrub{Pattern: s.Pattern, With: s.With})
	}
	return r
}

// ForTape returns the rules as a tape keeps them, nil when they are empty.
func (r Rules) ForTape() *tapefmt.MatchRules {
	if r.Empty() {
		return nil
	}
	m := &tapefmt.MatchRules{Ignore: append([]string(nil), r.Ignore...)}
	for _, s := range r.Scrub {
		m.Scrub = append(m.Scrub, tapefmt.MatchScrub{Pattern: s.Pattern, With: s.With})
	}
	return m
}

// String lists the rules in one line, as the CLI names them: each ignore
// path, then each scrub as /PATTERN/ → WITH.
func (r Rules) String() string {
	var parts []string
	for _, p := range r.Ignore {
		parts = append(parts, "ignore "+p)
	}
	for _, s := range r.Scrub {
		parts = append(parts, fmt.Sprintf("scrub /%s/ -> %q", s.Pattern, s.With))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
