package termtext

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"src/main.go", "src/main.go"},
		{".git/hooks/pre-commit", ".git/hooks/pre-commit"},
		{"a b", `"a b"`},
		{"", `""`},
		{"x\x1b[2K\ry", `"x\x1b[2K\ry"`},
		{"\x1b[1A", `"\x1b[1A"`},
		{"a\u202eb\u2066c\u2069", `"a\u202eb\u2066c\u2069"`},
		{"zw\u200b\u200c\u200d\ufeff\u00ad", `"zw\u200b\u200c\u200d\ufeff\u00ad"`},
		{"fill\u3164\u115f\u2800", `"fill\u3164\u115f\u2800"`},
		{"c1\u009b\u0085", `"c1\u009b\u0085"`},
		{"nb\u00a0sp\u2028", `"nb\u00a0sp\u2028"`},
		{"vs\ufe0f", `"vs\ufe0f"`},
		{"bad\xff", `"bad\xff"`},
		{`q"b\`, `"q\"b\\"`},
		{"café/日本", `"café/日本"`},
		{"tag\U000e0041", `"tag\U000e0041"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := Escape("can't \x1b[31mread \"x\""); got != `can't \x1b[31mread "x"` {
		t.Errorf("Escape: %s", got)
	}
}

// TestSanitize: what Quote escapes in a name never reaches the terminal in
// text either. C1 controls (U+009B is CSI to terminals that read 8-bit
// controls) and fillers such as U+3164 passed before the one rule.
func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text\nsecond line", "plain text\nsecond line"},
		{"rm -rf /\u202e txt.exe\u200b \x1b[2J", "rm -rf /� txt.exe� ␛[2J"},
		{"tab\there\r\x7f", "tab here␍␡"},
		{"csi\u009b31m nel\u0085", "csi�31m nel�"},
		{"fill\u3164er", "fill�er"},
		{"sep\u2028par\u2029", "sep�par�"},
		{"bad\xffbyte", "bad�byte"},
		{"keep: café 日本 nb\u00a0sp ❤\ufe0f", "keep: café 日本 nb\u00a0sp ❤\ufe0f"},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func BenchmarkSanitizeClean(b *testing.B) {
	s := "The model answered with a long paragraph of ordinary text, as most frames hold. "
	for b.Loop() {
		Sanitize(s)
	}
}

// TestSanitizeKeepsEmojiJoins: a zero-width joiner between two emoji is
// part of the emoji (a family, a profession, a rainbow flag) and is kept,
// so Uniform can show the members side by side; anywhere else it is
// hidden text and shows as �.
func TestSanitizeKeepsEmojiJoins(t *testing.T) {
	for in, want := range map[string]string{
		"👨\u200d👩\u200d👧":       "👨\u200d👩\u200d👧",
		"👩🏽\u200d💻 done":        "👩🏽\u200d💻 done",
		"🏳\ufe0f\u200d🌈":        "🏳\ufe0f\u200d🌈",
		"a\u200db":              "a�b",
		"👍\u200d":               "👍�",
		"\u200d👍":               "�👍",
		"x\u200d👍\x1b[1m\u200b": "x�👍␛[1m�",
		"🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f": "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
		"a\U000e0067": "a�",
	} {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Uniform(Sanitize("👨\u200d👩\u200d👧")); got != "👨👩👧" {
		t.Errorf("a family, sanitized then made uniform: %q", got)
	}
	if got := Uniform(Sanitize("🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f!")); got != "🏴!" {
		t.Errorf("Scotland's flag, sanitized then made uniform: %q", got)
	}
}

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 changes"}, {1, "1 change"}, {2, "2 changes"}} {
		if got := Count(c.n, "change", "changes"); got != c.want {
			t.Errorf("Count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestShellQuote: a word that a POSIX shell reads back as the string it
// quotes, bare only when nothing in it is special to the shell.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"tapes/run.jbx":    "tapes/run.jbx",
		"s3://bucket/p/":   "s3://bucket/p/",
		"":                 "''",
		"my tape.jbx":      "'my tape.jbx'",
		"it's":             `'it'\''s'`,
		"POST; rm -rf ~ #": "'POST; rm -rf ~ #'",
		"$(touch pwned)":   "'$(touch pwned)'",
		"a\nb":             `$'a\x0ab'`,
		// What would act on the terminal (a tape's folder with an escape
		// sequence, a bidi control, bytes not UTF-8) is escaped, the word
		// the same for bash.
		"ws\x1b]0;t\x07":         `$'ws\x1b]0;t\x07'`,
		"it's\x1b[2J":            `$'it\'s\x1b[2J'`,
		"a\u202eb":               `$'a\xe2\x80\xaeb'`,
		"tape\U000E0041b.jbx":    `$'tape\xf3\xa0\x81\x81b.jbx'`,
		"a\xffb\\":               `$'a\xffb\\'`,
		"http://h:1/v1?x=1&y=$Z": "'http://h:1/v1?x=1&y=$Z'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
