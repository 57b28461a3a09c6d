package redact

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// decoderWalk is walkStrings as it was, on encoding/json's Decoder.Token:
// the oracle of TestWalkStringsIsTheDecoders.
func decoderWalk(doc []byte, f func(path string, from, to int, text string)) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	var st jsonStack
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				st = append(st, jsonLevel{obj: t == '{', isKey: t == '{'})
				continue
			}
			st = st[:len(st)-1]
		case string:
			if top := st.top(); top != nil && top.obj && top.isKey {
				top.key, top.isKey = []byte(t), false
				continue
			}
			after := int(dec.InputOffset())
			f(st.path(), before+bytes.IndexByte(doc[before:after], '"'), after, t)
		}
		st.next()
	}
}

type walked struct {
	path     string
	from, to int
	text     string
}

func walkAll(walk func([]byte, func(string, int, int, string)), doc []byte) []walked {
	var out []walked
	walk(doc, func(path string, from, to int, text string) { out = append(out, walked{path, from, to, text}) })
	return out
}

var jsonPieces = []string{"{", "}", "[", "]", ",", ":", " ", "\n", `"a"`, `"delta"`, `"content"`, `"sk-"`,
	`"x\"y"`, `"\u00e9t\u00e9"`, `"é"`, "\"\xff\"", `"\q"`, `"tab	"`, "1", "-2.5e3", "true", "false", "null", "tru", "-",
	`"`, `{"choices":[{"delta":{"content":"SEC"}}]}`, `[DONE]`}

// TestWalkStringsIsTheDecoders: the hand-written walk reports the same
// strings, paths and places as Decoder.Token did, on valid and broken
// documents alike.
func TestWalkStringsIsTheDecoders(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	seen := 0
	for n := 0; n < 100000; n++ {
		var b strings.Builder
		for range 1 + r.IntN(16) {
			b.WriteString(jsonPieces[r.IntN(len(jsonPieces))])
		}
		doc := []byte(b.String())
		want, got := walkAll(decoderWalk, doc), walkAll(walkStrings, doc)
		if !slices.Equal(got, want) {
			t.Fatalf("on %q:\nwalk    %v\ndecoder %v", doc, got, want)
		}
		seen += len(want)
	}
	t.Logf("%d strings compared", seen)
	if seen < 20000 {
		t.Fatalf("only %d strings: the documents do not exercise the walk", seen)
	}
}

func BenchmarkWalkStrings(b *testing.B) {
	ev := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}]}`)
	for name, walk := range map[string]func([]byte, func(string, int, int, string)){"decoder": decoderWalk, "walk": walkStrings} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(ev)))
			for range b.N {
				walk(ev, func(string, int, int, string) {})
			}
		})
	}
}

func FuzzWalkStrings(f *testing.F) {
	f.Add([]byte(`{"choices":[{"delta":{"content":"SEC"}}]}`))
	f.Add([]byte(`1false"x"[1e400]`))
	f.Add([]byte(`["a",1` + strings.Repeat("0", 400) + `,"b"]`)) // out of float64's range without an exponent
	f.Fuzz(func(t *testing.T, doc []byte) {
		if want, got := walkAll(decoderWalk, doc), walkAll(walkStrings, doc); !slices.Equal(got, want) {
			t.Fatalf("on %q:\nwalk    %v\ndecoder %v", doc, got, want)
		}
	})
}

// FuzzUnquote: a string literal's text is json.Unmarshal's.
func FuzzUnquote(f *testing.F) {
	f.Add([]byte(`a\n\u00e9\ud83d\ude00\ud800x\"`))
	f.Add([]byte("caf\xc3\xa9 \xff"))
	f.Fuzz(func(t *testing.T, s []byte) {
		var want string
		err := json.Unmarshal(append(append([]byte{'"'}, s...), '"'), &want)
		got, ok := unquote(s)
		if ok != (err == nil) || ok && string(got) != want {
			t.Fatalf("unquote(%q) = %q, %v; json.Unmarshal: %q, %v", s, got, ok, want, err)
		}
	})
}
