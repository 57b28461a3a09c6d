package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/timeline"
)

// tagsEnv holds tags for every run, KEY=VALUE separated by commas.
const tagsEnv = "JUKEBOX_TAGS"

// tagFlags are a run's labels, written on its tape.
type tagFlags struct {
	Tag []string `placeholder:"KEY=VALUE" sep:"none" help:"Label the run, e.g. --tag team=search --tag ticket=AB-12 (repeatable; JUKEBOX_TAGS=KEY=VALUE,KEY=VALUE adds to them, a flag wins over it for the same key). Shown by ls, the turntable and the exports; list runs by tag with ls --tag. A fork or replay keeps its source tape's tags."`
}

// tags are the labels JUKEBOX_TAGS and --tag give, nil when none.
func (f tagFlags) tags() (map[string]string, error) {
	var m map[string]string
	add := func(kv, from string) error {
		k, v, err := parseTag(kv)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("%s %q: %w", from, kv, err))
		}
		if m == nil {
			m = map[string]string{}
		}
		m[k] = v
		return nil
	}
	if env := strings.TrimSpace(os.Getenv(tagsEnv)); env != "" {
		for kv := range strings.SplitSeq(env, ",") {
			if err := add(strings.TrimSpace(kv), tagsEnv); err != nil {
				return nil, err
			}
		}
	}
	for _, kv := range f.Tag {
		if err := add(kv, "--tag"); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Limits of a tag: keys are names, values short text.
const (
	maxTagKey   = 64
	maxTagValue = 256
)

// parseTag splits KEY=VALUE: a key of letters, digits and . _ - / :
// (at most 64), a value of printable text (at most 256 bytes, may be
// empty).
func parseTag(kv string) (key, value string, err error) {
	key, value, ok := strings.Cut(kv, "=")
	switch {
	case !ok:
		return "", "", fmt.Errorf("want KEY=VALUE")
	case key == "":
		return "", "", fmt.Errorf("the key is empty")
	case len(key) > maxTagKey:
		return "", "", fmt.Errorf("the key is longer than %d characters", maxTagKey)
	case len(value) > maxTagValue:
		return "", "", fmt.Errorf("the value is longer than %d bytes", maxTagValue)
	case !utf8.ValidString(value):
		return "", "", fmt.Errorf("the value is not UTF-8")
	}
	for _, r := range key {
		if !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) || strings.ContainsRune("._-/:", r)) {
			return "", "", fmt.Errorf("the key may hold ASCII letters, digits and . _ - / : only, not %q", r)
		}
	}
	for _, r := range value {
		if !unicode.IsPrint(r) {
			return "", "", fmt.Errorf("the value holds a control or invisible character %q", r)
		}
	}
	return key, value, nil
}

// tagFilter is ls --tag: KEY=VALUE wants that value, KEY alone the key
// with any value; a run must have every one.
type tagFilter []string

// match reports whether tags has every tag f asks for.
func (f tagFilter) match(tags map[string]string) bool {
	for _, want := range f {
		k, v, exact := strings.Cut(want, "=")
		have, ok := tags[k]
		if !ok || exact && have != v {
			return false
		}
	}
	return true
}

// tagText is tags as KEY=VALUE, by key, comma-separated.
func tagText(tags map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(tags)) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k + "=" + tags[k])
	}
	return b.String()
}

// words is f for "no tapes ... in DIR": " tagged K=V and K", or "".
func (f tagFilter) words() string {
	if len(f) == 0 {
		return ""
	}
	return " tagged " + strings.Join(f, " and ")
}

// tagsColumn is ls's TAGS column, when any row has tags: its heading, or
// a row's tags, one line, by key.
func tagsColumn(tagged bool, tags map[string]string, heading bool) string {
	switch {
	case !tagged:
		return ""
	case heading:
		return "\tTAGS"
	case len(tags) == 0:
		return "\t-"
	}
	return "\t" + timeline.OneLine(tagText(tags), 60)
}
