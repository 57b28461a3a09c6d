package llmwire

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// unmarshalInfo is what ParseRequestInfo must equal: json.Unmarshal.
func unmarshalInfo(b []byte) RequestInfo {
	var ri RequestInfo
	_ = json.Unmarshal(b, &ri)
	return ri
}

// TestRequestInfoIsUnmarshal: the one-pass reader gives what
// json.Unmarshal gives, on request bodies and on their mutations (cut,
// bytes changed, keys in other cases, values of other types).
func TestRequestInfoIsUnmarshal(t *testing.T) {
	bodies := []string{
		`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi \"there\"\n"}],"max_tokens":512,"temperature":0.5e-3}`,
		` { "MODEL" : "a", "Stream": false, "model": "b", "x": {"y": [1, -2.5, true, null, {}, []]} } `,
		`{"messages":[],"model":null,"stream":null}`,
		`{"model":"c\u00e9","stream":"yes"}`,
		`{"model":5,"stream":true}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`,
		`{}`, `[]`, `"model"`, `{"model":"x"} trailing`, `{"model":"x",}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`,
	}
	r := rand.New(rand.NewPCG(3, 4))
	check := func(b []byte) {
		t.Helper()
		if got, want := ParseRequestInfo(b), unmarshalInfo(b); got != want {
			t.Fatalf("ParseRequestInfo(%q) = %+v, json.Unmarshal gives %+v", b, got, want)
		}
	}
	alphabet := []byte(`{}[]":,\ 0123456789.eE+-truefalsnMODELmodelstream`)
	for _, s := range bodies {
		check([]byte(s))
		for range 3000 {
			b := []byte(s)
			switch r.IntN(4) {
			case 0:
				b = b[:r.IntN(len(b)+1)]
			case 1:
				for range 1 + r.IntN(3) {
					b[r.IntN(len(b))] = alphabet[r.IntN(len(alphabet))]
				}
			case 2:
				i := r.IntN(len(b) + 1)
				b = append(b[:i:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, []byte(s)[i:]...)...)
			case 3:
				b = []byte(strings.Replace(s, "model", []string{"Model", "mOdEl", "modeL", "mode"}[r.IntN(4)], 1))
			}
			check(b)
		}
	}
}

func FuzzParseRequestInfo(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"Model":"a","model":null,"x":[1,{"y":"\u0041"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ParseRequestInfo(b), unmarshalInfo(b); got != want {
			t.Fatalf("ParseRequestInfo(%q) = %+v, json.Unmarshal gives %+v", b, got, want)
		}
	})
}

// BenchmarkParseRequestInfo: a 50-turn conversation's request body.
func BenchmarkParseRequestInfo(b *testing.B) {
	var s strings.Builder
	s.WriteString(`{"model":"gpt-4o","stream":true,"messages":[`)
	for i := range 50 {
		if i > 0 {
			s.WriteString(",")
		}
		s.WriteString(`{"role":"user","content":"Please read the file src/main.go and say what the function at line 40 does.\n\nIt is \"short\"."},{"role":"assistant","content":"It parses the configuration and returns an error when the input is empty."}`)
	}
	s.WriteString(`],"max_tokens":512}`)
	body := []byte(s.String())
	b.Run("unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			unmarshalInfo(body)
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			ParseRequestInfo(body)
		}
	})
}
