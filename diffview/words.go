package diffview

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// SpanOp says which side of a word diff a span belongs to.
type SpanOp uint8

// Span operations.
const (
	Equal  SpanOp = iota // on both sides
	Delete               // only on the left
	Insert               // only on the right
)

var spanOpNames = [...]string{Equal: "equal", Delete: "delete", Insert: "insert"}

// String returns the op's name as JSON writes it.
func (o SpanOp) String() string {
	if int(o) < len(spanOpNames) {
		return spanOpNames[o]
	}
	return fmt.Sprintf("spanop(%d)", uint8(o))
}

// MarshalText writes the op's name.
func (o SpanOp) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText reads an op's name.
func (o *SpanOp) UnmarshalText(b []byte) error {
	for i, n := range spanOpNames {
		if n == string(b) {
			*o = SpanOp(i)
			return nil
		}
	}
	return fmt.Errorf("diffview: unknown span op %q", b)
}

// Span is a run of text in a word diff.
type Span struct {
	Op   SpanOp `json:"op"`
	Text string `json:"text"`
}

// wordDiffTimeout bounds one word diff; past it go-diff returns a coarser,
// still correct, diff. Only bodies of many thousands of differing words get
// near it.
const wordDiffTimeout = time.Second

// maxWordDiffBytes bounds the texts wordDiff compares word by word (and so
// the distinct tokens, which must fit in the runes); larger texts are shown
// as replaced whole.
const maxWordDiffBytes = 2 << 20

// wordDiff compares a and b word by word: words (runs of anything but
// blanks, quotes, brackets and separators, so gpt-4o-mini and src/a.py are one
// word each), runs of blanks, line breaks and single separators are the
// units, so a change never splits a word. Each token is encoded as one
// rune and the rune strings are compared with go-diff's Myers diff, then
// cleaned up semantically so that small equalities between edits fold in.
// Joining the Equal and Delete spans gives a; Equal and Insert give b.
func wordDiff(a, b string) []Span {
	if a == b {
		if a == "" {
			return nil
		}
		return []Span{{Equal, a}}
	}
	pre, suf := commonLines(a, b)
	spans := make([]Span, 0, 8)
	if pre > 0 {
		spans = append(spans, Span{Equal, a[:pre]})
	}
	for _, sp := range diffWords(a[pre:len(a)-suf], b[pre:len(b)-suf]) {
		if n := len(spans); n > 0 && spans[n-1].Op == sp.Op {
			spans[n-1].Text += sp.Text
		} else {
			spans = append(spans, sp)
		}
	}
	if suf > 0 {
		if n := len(spans); n > 0 && spans[n-1].Op == Equal {
			spans[n-1].Text += a[len(a)-suf:]
		} else {
			spans = append(spans, Span{Equal, a[len(a)-suf:]})
		}
	}
	return spans
}

// commonLines returns the lengths of the whole lines a and b begin with and
// end with alike, without overlapping: prompts that resend a conversation
// differ in a few lines of many, and comparing bytes is far cheaper than
// comparing words.
func commonLines(a, b string) (pre, suf int) {
	n := min(len(a), len(b))
	for pre < n && a[pre] == b[pre] {
		pre++
	}
	pre = strings.LastIndexByte(a[:pre], '\n') + 1
	n -= pre
	for suf < n && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if i := strings.IndexByte(a[len(a)-suf:], '\n'); i >= 0 {
		suf -= i + 1
	} else {
		suf = 0
	}
	return pre, suf
}

// diffWords is wordDiff without the shortcuts.
func diffWords(a, b string) []Span {
	if len(a)+len(b) > maxWordDiffBytes {
		return []Span{{Delete, a}, {Insert, b}}
	}
	var enc encoder
	ra, rb := enc.encode(a), enc.encode(b)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = wordDiffTimeout
	diffs := dmp.DiffCleanupSemantic(dmp.DiffMainRunes(ra, rb, false))
	spans := make([]Span, 0, len(diffs))
	for _, d := range diffs {
		op := Equal
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = Delete
		case diffmatchpatch.DiffInsert:
			op = Insert
		}
		text := enc.decode(d.Text)
		if n := len(spans); n > 0 && spans[n-1].Op == op {
			spans[n-1].Text += text
		} else if text != "" {
			spans = append(spans, Span{op, text})
		}
	}
	return spans
}

// encoder maps each distinct token to one rune. Runes start past Latin-1 and
// skip the surrogates, which do not survive a trip through a string.
type encoder struct {
	ids    map[string]rune
	tokens []string
}

const (
	firstTokenRune = 0x100
	surrogateLo    = 0xD800
	surrogateHi    = 0xE000
)

func (e *encoder) encode(s string) []rune {
	if e.ids == nil {
		e.ids = map[string]rune{}
	}
	out := make([]rune, 0, len(s)/4+1)
	for len(s) > 0 {
		n := tokenLen(s)
		tok := s[:n]
		s = s[n:]
		r, ok := e.ids[tok]
		if !ok {
			r = rune(firstTokenRune + len(e.tokens))
			if r >= surrogateLo {
				r += surrogateHi - surrogateLo
			}
			e.ids[tok] = r
			e.tokens = append(e.tokens, tok)
		}
		out = append(out, r)
	}
	return out
}

func (e *encoder) decode(s string) string {
	var b strings.Builder
	for _, r := range s {
		i := int(r) - firstTokenRune
		if r >= surrogateHi {
			i -= surrogateHi - surrogateLo
		}
		if i >= 0 && i < len(e.tokens) {
			b.WriteString(e.tokens[i])
		}
	}
	return b.String()
}

// tokenLen returns the byte length of the token at the start of s.
func tokenLen(s string) int {
	r, n := utf8.DecodeRuneInString(s)
	class := runeClass(r)
	if class == classOther || class == classNewline {
		return n
	}
	for n < len(s) {
		r, m := utf8.DecodeRuneInString(s[n:])
		if runeClass(r) != class {
			break
		}
		n += m
	}
	return n
}

const (
	classWord = iota
	classBlank
	classNewline
	classOther
)

func runeClass(r rune) int {
	switch {
	case r == '\n':
		return classNewline
	case unicode.IsSpace(r):
		return classBlank
	case strings.ContainsRune(separators, r) || unicode.IsControl(r):
		return classOther
	}
	return classWord
}

// separators end a word and are tokens of their own.
const separators = "{}[]()<>,;:\"'`=|"
