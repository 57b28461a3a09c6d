package kong

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestParseTagItemsAsBefore: the byte-wise parseTagItems reads every tag
// as the rune-wise one it replaced (parseTagItemsRunes, kept here) did:
// the same items, the same errors, on real tags and on tags made of the
// characters that mean something in one, non-ASCII text and escapes.
func TestParseTagItemsAsBefore(t *testing.T) {
	tags := []string{
		`cmd:"" help:"Replay a tape."`,
		`name:"max-cost" help:"Stop at $N (\"dollars\"), é." default:"0" env:"A,B" kong:"required,name='x'"`,
		`help:"tab\there" placeholder:"FILE"`, `help:"unterminated`, `a:"b"c`, `kong:"-"`, ``,
		`short:"j" help:"Tapes replayed at once (default: the number of CPUs)."`,
	}
	pieces := []string{",", " ", "'", "\"", "=", ":", "\\", "\\\"", "\\'", "a", "key", "help", "é", "✓", "\n", "\t", "x y"}
	r := rand.New(rand.NewPCG(5, 6))
	for range cases() {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		tags = append(tags, b.String())
	}
	for _, tag := range tags {
		for _, chr := range []tagChars{kongChars, bareChars} {
			got, gerr := parseTagItems(tag, chr)
			want, werr := parseTagItemsRunes(tag, chr)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || !maps.EqualFunc(got, want, slices.Equal) {
				t.Fatalf("%q (%+v):\nnow    %q, %v\nbefore %q, %v", tag, chr, got, gerr, want, werr)
			}
		}
	}
}

// cases is how many random inputs a comparison with the former code
// tries: 20,000, and 2,000 under -race, where 20,000 took 10 s.
func cases() int {
	if testenv.Race {
		return 2000
	}
	return 20000
}

// TestInterpolateAsBefore: interpolate, which returns a text without "$"
// as it is, gives what it gave when every text went through the regular
// expression (interpolateAlways, kept here).
func TestInterpolateAsBefore(t *testing.T) {
	pieces := []string{"$", "$$", "${", "}", "=", "name", "x", "${name}", "${other=d}", "${undefined}", " ", "é", "{"}
	vars := Vars{"name": "value", "other": "o"}
	r := rand.New(rand.NewPCG(7, 8))
	for range cases() {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		got, gerr := interpolate(s, vars, map[string]string{"name": "updated"})
		want, werr := interpolateAlways(s, vars, map[string]string{"name": "updated"})
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%q: now %q, %v; before %q, %v", s, got, gerr, want, werr)
		}
		if has, had := HasInterpolatedVar(s, "name"), slices.ContainsFunc(interpolationRegex().FindAllStringSubmatch(s, -1),
			func(m []string) bool { return m[3] == "name" }); has != had {
			t.Fatalf("HasInterpolatedVar(%q, name) = %v, was %v", s, has, had)
		}
	}
}

// interpolateAlways is interpolate as it was: every text through the
// regular expression.
func interpolateAlways(s string, vars Vars, updatedVars map[string]string) (string, error) {
	out := ""
	matches := interpolationRegex().FindAllStringSubmatch(s, -1)
	if len(matches) == 0 {
		return s, nil
	}
	for key, val := range updatedVars {
		if vars[key] != val {
			vars = vars.CloneWith(updatedVars)
			break
		}
	}
	for _, match := range matches {
		if dollar := match[1]; dollar != "" {
			out += "$"
		} else if name := match[3]; name != "" {
			value, ok := vars[name]
			if !ok {
				// Check for "=" rather than an empty default, as "${name=}" is an empty default.
				if match[4] == "" {
					return "", fmt.Errorf("undefined variable ${%s}", name)
				}
				value = match[5]
			}
			out += value
		} else {
			out += match[0]
		}
	}
	return out, nil
}

// parseTagItemsRunes is parseTagItems as it was: the tag read as []rune.
func parseTagItemsRunes(tagString string, chr tagChars) (map[string][]string, error) {
	d := map[string][]string{}
	key := []rune{}
	value := []rune{}
	quotes := false
	inKey := true

	add := func() error {
		// Bare tags are quoted, therefore we need to unquote them in the same fashion reflect.Lookup() (implicitly)
		// unquotes "kong tags".
		s := string(value)

		if chr.needsUnquote && s != "" {
			if unquoted, err := strconv.Unquote(fmt.Sprintf(`"%s"`, s)); err == nil {
				s = unquoted
			} else {
				return fmt.Errorf("unquoting tag value `%s`: %w", s, err)
			}
		}

		d[string(key)] = append(d[string(key)], s)
		key = []rune{}
		value = []rune{}
		inKey = true

		return nil
	}

	runes := []rune(tagString)
	for idx := 0; idx < len(runes); idx++ {
		r := runes[idx]
		next := rune(0)
		eof := false
		if idx < len(runes)-1 {
			next = runes[idx+1]
		} else {
			eof = true
		}
		if !quotes && r == chr.sep {
			if err := add(); err != nil {
				return nil, err
			}

			continue
		}
		if r == chr.assign && inKey {
			inKey = false
			continue
		}
		if r == '\\' {
			if next == chr.quote {
				idx++

				// We need to keep the backslashes, otherwise subsequent unquoting cannot work
				if chr.needsUnquote {
					value = append(value, r)
				}

				r = chr.quote
			}
		} else if r == chr.quote {
			if quotes {
				quotes = false
				if next == chr.sep || eof {
					continue
				}
				return nil, fmt.Errorf("%v has an unexpected char at pos %v", tagString, idx)
			}
			quotes = true
			continue
		}
		if inKey {
			key = append(key, r)
		} else {
			value = append(value, r)
		}
	}
	if quotes {
		return nil, fmt.Errorf("%v is not quoted properly", tagString)
	}

	if err := add(); err != nil {
		return nil, err
	}

	return d, nil
}
