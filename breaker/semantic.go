package breaker

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Near-duplicate answers: an answer's words (lower-cased, split at
// anything but letters and digits) are cut into overlapping pairs, and two
// answers whose sets of pairs overlap by at least Similarity (Jaccard:
// shared pairs over all pairs) say the same thing in other words, a few
// words changed, added or dropped. This is the measure MinHash estimates,
// computed exactly: a run holds few enough answers. Answers under MinWords
// words are not compared (short answers such as "Done." repeat
// legitimately); only the last maxAnswers are kept. An answer holding code
// is compared by its code instead: fenced blocks equal once names and
// spacing are set aside (normalizeCode).
//
// Numbers tell progress from repetition: words holding a digit are
// compared as one word ("#"), and two answers alike in their words say the
// same thing only when their numbers are the same too, in the same order:
// "Migrated table 2 of 40" and "Migrated table 4 of 40" are progress, a
// counter that advances; the same sentence with the same numbers again is
// a loop.
const (
	Similarity = 0.6
	MinWords   = 8
	maxAnswers = 200
)

// answerPrint is what an answer is compared by.
type answerPrint struct {
	code  string   // normalised code blocks, when the answer has any
	pairs []uint64 // hashes of its word pairs, sorted and unique, otherwise
	nums  string   // its words that hold a digit, in order
	seq   uint64
}

func (b *Breaker) semantic(a Answer) *Trip {
	n := b.l.MaxSemanticRepeat
	if n <= 0 {
		return nil
	}
	p, ok := fingerprint(a.Text)
	if !ok {
		return nil
	}
	p.seq = a.Seq
	if b.answers = append(b.answers, p); len(b.answers) > maxAnswers {
		b.answers = b.answers[1:]
	}
	var frames []uint64
	for _, q := range b.answers {
		if same(p, q) {
			frames = append(frames, q.seq)
		}
	}
	if len(frames) < n {
		return nil
	}
	what := "answers saying the same thing"
	if p.code != "" {
		what = "answers with the same code (names and spacing aside)"
	}
	return &Trip{Rule: RuleSemanticRepeat, Evidence: frames,
		Reason: fmt.Sprintf("%d %s: %s", len(frames), what, oneLine(a.Text))}
}

func same(p, q answerPrint) bool {
	if p.code != "" || q.code != "" {
		return p.code == q.code
	}
	if p.nums != q.nums {
		return false // a number moved on: progress
	}
	a, b := p.pairs, q.pairs
	// Jaccard is at most the smaller set over the larger: most answers are
	// told apart by their sizes alone.
	if float64(min(len(a), len(b))) < Similarity*float64(max(len(a), len(b))) {
		return false
	}
	shared := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			shared++
			i++
			j++
		}
	}
	return float64(shared) >= Similarity*float64(len(a)+len(b)-shared)
}

// fingerprint is how an answer is compared; ok is false for one too short
// to compare.
func fingerprint(text string) (answerPrint, bool) {
	if blocks := codeBlocks(text); len(blocks) > 0 {
		var b strings.Builder
		for _, c := range blocks {
			b.WriteString(normalizeCode(c.lang, c.body))
			b.WriteByte(0)
		}
		return answerPrint{code: b.String()}, true
	}
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	if len(words) < MinWords {
		return answerPrint{}, false
	}
	var nums []string
	for i, w := range words {
		if strings.ContainsFunc(w, unicode.IsDigit) {
			nums, words[i] = append(nums, w), "#"
		}
	}
	pairs := make([]uint64, 0, len(words))
	for i := 0; i+1 < len(words); i++ {
		pairs = append(pairs, pairHash(words[i], words[i+1]))
	}
	slices.Sort(pairs)
	return answerPrint{pairs: slices.Compact(pairs), nums: strings.Join(nums, " ")}, true
}

// pairHash is FNV-1a over "a b".
func pairHash(a, b string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, w := range []string{a, " ", b} {
		for i := 0; i < len(w); i++ {
			h = (h ^ uint64(w[i])) * prime
		}
	}
	return h
}

type codeBlock struct{ lang, body string }

// fence is compiled on first use, not at package initialisation (every
// command would pay for it).
var fence = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?s)```([A-Za-z0-9_+-]*)[^\\n]*\\n(.*?)```")
})

// codeBlocks are the fenced code blocks of a Markdown answer.
func codeBlocks(text string) []codeBlock {
	var out []codeBlock
	for _, m := range fence().FindAllStringSubmatch(text, -1) {
		out = append(out, codeBlock{lang: strings.ToLower(m[1]), body: m[2]})
	}
	return out
}

// normalizeCode sets names and spacing aside: Go is parsed (go/parser,
// as a file, or as statements inside a function) and printed again with
// every identifier but the blank one and the predeclared ones renamed in
// order of appearance; any other language, or Go that does not parse, is
// cut into tokens (words, numbers, strings, single punctuation) with
// comments (#, //) dropped and words other than common keywords renamed
// the same way: code that differs only in names and layout reads the same.
func normalizeCode(lang, src string) string {
	if lang == "go" || lang == "golang" {
		if s, ok := normalizeGo(src); ok {
			return s
		}
	}
	return normalizeTokens(src)
}

func normalizeGo(src string) (string, bool) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		file, err = parser.ParseFile(fset, "", "package p\nfunc _() {\n"+src+"\n}", 0)
	}
	if err != nil {
		return "", false
	}
	names := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || id.Name == "_" || predeclared[id.Name] {
			return true
		}
		if _, ok := names[id.Name]; !ok {
			names[id.Name] = fmt.Sprintf("v%d", len(names))
		}
		id.Name = names[id.Name]
		return true
	})
	var b bytes.Buffer
	if err := format.Node(&b, fset, file); err != nil {
		return "", false
	}
	return b.String(), true
}

// predeclared Go names keep their meaning: renaming them would make
// different programs equal.
var predeclared = map[string]bool{"true": true, "false": true, "nil": true, "iota": true, "append": true, "len": true,
	"cap": true, "make": true, "new": true, "panic": true, "print": true, "println": true, "copy": true, "delete": true,
	"string": true, "int": true, "int64": true, "float64": true, "bool": true, "byte": true, "rune": true, "error": true, "any": true}

// keywords of common languages (Python, JavaScript, shell, C-like) keep
// their meaning in normalizeTokens.
var keywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`if else elif while for in of return def function class import from try except
		catch finally with as and or not is var let const new this self None True False null undefined true false
		break continue pass yield async await lambda do done then fi case esac switch default struct func go defer
		select chan map range type package interface public private static void int float double char`) {
		m[k] = true
	}
	return m
}()

// codeToken is a token of code in any language, compiled on first use.
var codeToken = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`//[^\n]*|#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9.]*|\S`)
})

func normalizeTokens(src string) string {
	names := map[string]string{}
	var out []string
	for _, t := range codeToken().FindAllString(src, -1) {
		switch c := t[0]; {
		case strings.HasPrefix(t, "//"), c == '#':
			continue
		case keywords[t]:
		case c == '_' || unicode.IsLetter(rune(c)):
			if _, ok := names[t]; !ok {
				names[t] = fmt.Sprintf("w%d", len(names))
			}
			t = names[t]
		}
		out = append(out, t)
	}
	return strings.Join(out, " ")
}
