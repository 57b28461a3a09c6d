package termtext

import "testing"

// TestUniform: the sequences terminals draw at different widths lose the
// parts they disagree on; other text, escapes included, stays as it is.
func TestUniform(t *testing.T) {
	for in, want := range map[string]string{
		"All tests pass 👍🏽":     "All tests pass 👍",
		"❤️ 1️⃣":                "❤ 1",
		"👨\u200d👩\u200d👧":       "👨👩👧",
		"🇫🇷🇯🇵":                  "FRJP",
		"🏴\U000e0067\U000e007f": "🏴",
		"漢字 e\u0301 \x1b[31m":   "漢字 e\u0301 \x1b[31m",
		"plain":                 "plain",
	} {
		if got := Uniform(in); got != want {
			t.Errorf("Uniform(%q) = %q, want %q", in, got, want)
		}
	}
}
