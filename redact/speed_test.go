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
