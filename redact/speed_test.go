package redact

import (
	"fmt"
	"strings"
	"testing"
)

// chatBody is a model request of n turns with nothing to mask: URLs, an
// e-mail address, code and the word token in it.
func chatBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","max_tokens":512,"messages":[`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"role":"user","content":"Step %d: please read the file src/main.go and tell me what the function at line %d does. See https://example.com/docs for context, mail bob@example.com."},`, i, i)
		fmt.Fprintf(&b, `{"role":"assistant","content":"The function parses the configuration, checks the token count and returns an error when the input is empty.\n\nfunc parse(s string) (Config, error) {\n\tif s == \"\" {\n\t\treturn Config{}, errEmpty\n\t}\n}"},`)
	}
	b.WriteString(`{"role":"user","content":"go on"}]}`)
	return []byte(b.String())
}

// BenchmarkMaskRules: the credential rules over a 42 KB request body,
// each regexp over the whole text (regexp) against the rules run where
// their keys are (keys), as maskRules does.
func BenchmarkMaskRules(b *testing.B) {
	body := chatBody(100)
	b.Run("regexp", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			out := body
			for _, r := range anyText() {
				out = replaceAll(out, r.re, 2)
			}
		}
	})
	b.Run("keys", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for range b.N {
			maskRules(body)
		}
	})
}

// BenchmarkStream: a streamed answer of 72 chunks (OpenAI's events), the
// shape of every answer of bench/proxy's 50-step run, with nothing to
// mask.
func BenchmarkStream(b *testing.B) {
	var s strings.Builder
	words := strings.Fields("The function parses the configuration, checks the token count and returns an error when the input is empty.\n")
	for i := range 72 {
		fmt.Fprintf(&s, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", words[i%len(words)]+" \n")
	}
	s.WriteString("data: [DONE]\n\n")
	data := []byte(s.String())
	var m *Masker
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for range b.N {
		m.Stream(data, nil)
	}
}
