package diffview

import (
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Options shape a rendering. The zero value is usable: width 160, two
// frames and one line of context, at most 40 body lines per pair.
type Options struct {
	Width    int  // columns of the side-by-side output; ≤ 0 means 160, at least MinWidth
	Context  int  // same frames shown around each divergent pair; 0 means 2, < 0 none
	Lines    int  // unchanged body lines shown around each changed line; 0 means 1, < 0 none
	MaxLines int  // body lines shown per pair; 0 means 40, < 0 no limit
	All      bool // show every pair and every body line: nothing collapsed
	Styles   Styles
}

const (
	defaultWidth    = 160
	defaultContext  = 2
	defaultLines    = 1
	defaultMaxLines = 40
	previewLines    = 3 // body lines shown of a frame only one side has
)

func orDefault(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

func (o Options) context() int { return orDefault(o.Context, defaultContext) }
func (o Options) lines() int   { return orDefault(o.Lines, defaultLines) }

func (o Options) maxLines() int {
	if o.All || o.MaxLines < 0 {
		return 1 << 30
	}
	return orDefault(o.MaxLines, defaultMaxLines)
}

// row is one line of a body diff: the left and the right text, split where
// both sides have the same line break.
type row struct {
	left, right []seg
	inline      []seg // both sides interleaved, for Unified
	changed     bool
}

// diffRows turns a word diff into rows, marking changed words.
func diffRows(spans []Span, st Styles) []row {
	rs := []row{{}}
	cur := &rs[0]
	for _, s := range spans {
		switch s.Op {
		case Delete:
			sg := seg{st.marked(Delete, s.Text), clsDelete}
			cur.left, cur.inline, cur.changed = append(cur.left, sg), append(cur.inline, sg), true
		case Insert:
			sg := seg{st.marked(Insert, s.Text), clsInsert}
			cur.right, cur.inline, cur.changed = append(cur.right, sg), append(cur.inline, sg), true
		default:
			for i, part := range strings.Split(s.Text, "\n") {
				if i > 0 {
					rs = append(rs, row{})
					cur = &rs[len(rs)-1]
				}
				if part != "" {
					sg := seg{part, clsPlain}
					cur.left, cur.right, cur.inline = append(cur.left, sg), append(cur.right, sg), append(cur.inline, sg)
				}
			}
		}
	}
	if last := rs[len(rs)-1]; len(rs) > 1 && !last.changed && len(last.left) == 0 {
		rs = rs[:len(rs)-1] // the break that ends the text opens no line
	}
	return rs
}

// changedRows is the body rows of a changed pair: its word diff, or the
// unchanged body when only the title changed.
func changedRows(p Pair, f *Frame, st Styles) []row {
	if p.Body == nil {
		return textRows(f.Body, clsPlain)
	}
	return diffRows(p.Body, st)
}

// textRows turns a body that only one side has (or both have unchanged)
// into rows of one class.
func textRows(body string, cls class) []row {
	body = strings.TrimSuffix(body, "\n")
	if body == "" {
		return nil
	}
	var rs []row
	for l := range strings.SplitSeq(body, "\n") {
		s := []seg{{l, cls}}
		rs = append(rs, row{left: s, right: s, inline: s})
	}
	return rs
}

// shown is an item of a collapsed list: item index i, or a run of skip
// hidden items (all unchanged ones, unless more is set: the rest of a list
// cut short).
type shown struct {
	i, skip int
	more    bool
}

// foldNote is the text that stands for a run of hidden lines.
func (s shown) foldNote() string {
	if s.more {
		return "⋯ " + termtext.Count(s.skip, "more line", "more lines")
	}
	return "⋯ " + termtext.Count(s.skip, "same line", "same lines")
}

// pick keeps the items for which keep is true and ctx items either side of
// each, and folds the rest into runs; with all set it keeps everything.
func pick(n, ctx int, all bool, keep func(int) bool) []shown {
	want := make([]bool, n)
	for i := range n {
		if all || keep(i) {
			for j := max(0, i-ctx); j <= min(n-1, i+ctx); j++ {
				want[j] = true
			}
		}
	}
	var out []shown
	for i := 0; i < n; i++ {
		if want[i] {
			out = append(out, shown{i: i})
			continue
		}
		j := i
		for j < n && !want[j] {
			j++
		}
		out = append(out, shown{i: i, skip: j - i})
		i = j - 1
	}
	return out
}

// bodyRows is the rows of a pair's body as it should be shown: changed
// lines with their context, long unchanged runs folded, capped at max rows.
func bodyRows(rs []row, o Options) []shown {
	var out []shown
	lines := 0
	picked := pick(len(rs), o.lines(), o.All, func(i int) bool { return rs[i].changed })
	for k, s := range picked {
		if lines >= o.maxLines() {
			rest := 0
			for _, t := range picked[k:] {
				rest += max(t.skip, 1)
			}
			return append(out, shown{i: s.i, skip: rest, more: true})
		}
		out = append(out, s)
		if s.skip == 0 {
			lines++
		}
	}
	return out
}

// preview returns the first rows of a body only one side has, and how many
// more there are.
func preview(rs []row, all bool) ([]row, int) {
	if all || len(rs) <= previewLines {
		return rs, 0
	}
	return rs[:previewLines], len(rs) - previewLines
}
