package diffview

import (
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Gutters between the two columns of SideBySide, one per pair op.
const (
	gutterSame    = " │ "
	gutterChanged = " ~ "
	gutterLeft    = " < "
	gutterRight   = " > "
)

// MinWidth is the narrowest SideBySide lays out; a smaller width is raised
// to it.
const MinWidth = 64

const (
	frameLabelWidth = 20 // "%6d %-12s " before a frame's title
	bodyIndent      = 7  // body lines start under the kind
)

// SideBySide renders r in two columns, left timeline on the left: a heading
// with each side's totals, then the aligned frames, with the words that
// changed marked in each changed pair's title and body, runs of same frames
// folded (all of them shown with o.All), a banner at the first divergence,
// and the totals table with the delta. Between the columns, "~" marks a
// changed pair, "<" a frame only the left has and ">" one only the right has.
func SideBySide(r *Result, o Options) string {
	w := o.Width
	if w <= 0 {
		w = defaultWidth
	}
	sb := &sideBySide{r: r, o: o, col: (max(w, MinWidth) - len(gutterSame)) / 2}
	sb.heading()
	return walk(r, o, sb, &sb.b)
}

// layout is how a renderer draws the steps of a walk over the pairs.
type layout interface {
	fold(i, n int) // n same pairs from pair i, folded
	banner(s seg)  // a line across the whole output
	pair(p Pair)
}

// walk draws the pairs o shows (folding runs of same ones), the banner at
// the first divergence or the note that there is none, then the totals; b
// is the builder the layout writes to.
func walk(r *Result, o Options, l layout, b *strings.Builder) string {
	for _, s := range pick(len(r.Pairs), o.context(), o.All, func(i int) bool { return r.Pairs[i].Op != Same }) {
		if s.skip > 0 {
			l.fold(s.i, s.skip)
			continue
		}
		if s.i == r.First {
			d, _ := r.Divergence()
			l.banner(seg{"▶ first divergence: " + d.Text, clsDivergence})
		}
		l.pair(r.Pairs[s.i])
	}
	if r.equal() {
		l.banner(seg{"= the timelines agree frame for frame", clsDivergence})
	}
	for _, note := range r.notes() {
		l.banner(seg{note, clsFaint})
	}
	b.WriteString("\n")
	for _, line := range totalsText(r, o.Styles) {
		b.WriteString(line + "\n")
	}
	return b.String()
}

type sideBySide struct {
	r   *Result
	o   Options
	col int
	b   strings.Builder
}

// emit writes two columns of lines side by side, padding the shorter.
func (sb *sideBySide) emit(left, right []line, gutter string) {
	for i := range max(len(left), len(right)) {
		var l, r line
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		out := l.render(sb.o.Styles, sb.col) + sb.o.Styles.apply(clsFaint, gutter) + r.render(sb.o.Styles, 0)
		sb.b.WriteString(strings.TrimRight(out, " ") + "\n")
	}
}

// banner writes one line across both columns.
func (sb *sideBySide) banner(s seg) {
	for _, l := range wrap([]seg{s}, 2*sb.col+len(gutterSame)) {
		sb.b.WriteString(l.render(sb.o.Styles, 0) + "\n")
	}
}

func (sb *sideBySide) heading() {
	r := sb.r
	sb.emit(wrap([]seg{{"left: " + r.Left.Name, clsHeader}}, sb.col),
		wrap([]seg{{"right: " + r.Right.Name, clsHeader}}, sb.col), gutterSame)
	sb.emit([]line{{{truncate(summary(r.LeftTotals), sb.col), clsFaint}}},
		[]line{{{truncate(summary(r.RightTotals), sb.col), clsFaint}}}, gutterSame)
	rule := strings.Repeat("─", sb.col)
	sb.b.WriteString(sb.o.Styles.apply(clsFaint, rule+"─┼─"+rule) + "\n")
}

// fold writes the line that stands for n same pairs from pair i on.
func (sb *sideBySide) fold(i, n int) {
	first, last := sb.r.Pairs[i], sb.r.Pairs[i+n-1]
	sb.emit([]line{{{fmt.Sprintf("     ⋯ %s (%d–%d)", termtext.Count(n, "same frame", "same frames"),
		sb.r.Left.Frames[first.Left].Seq, sb.r.Left.Frames[last.Left].Seq), clsFaint}}},
		[]line{{{fmt.Sprintf("     ⋯ (%d–%d)", sb.r.Right.Frames[first.Right].Seq,
			sb.r.Right.Frames[last.Right].Seq), clsFaint}}}, gutterSame)
}

func (sb *sideBySide) pair(p Pair) {
	var lf, rf *Frame
	if p.Left >= 0 {
		lf = &sb.r.Left.Frames[p.Left]
	}
	if p.Right >= 0 {
		rf = &sb.r.Right.Frames[p.Right]
	}
	switch p.Op {
	case Same:
		sb.emit(sb.header(lf, []seg{{lf.Title, clsFaint}}), sb.header(rf, []seg{{rf.Title, clsFaint}}), gutterSame)
		if sb.o.All {
			sb.body(textRows(lf.Body, clsFaint), gutterSame)
		}
	case Changed:
		lt, rt := []seg{{lf.Title, clsPlain}}, []seg{{rf.Title, clsPlain}}
		if p.Title != nil {
			tr := diffRows(p.Title, sb.o.Styles)[0]
			lt, rt = tr.left, tr.right
		}
		sb.emit(sb.header(lf, lt), sb.header(rf, rt), gutterChanged)
		sb.body(changedRows(p, lf, sb.o.Styles), gutterChanged)
	case OnlyLeft:
		sb.emit(sb.header(lf, []seg{{lf.Title, clsDelete}}), nil, gutterLeft)
		sb.preview(textRows(lf.Body, clsDelete), true)
	case OnlyRight:
		sb.emit(nil, sb.header(rf, []seg{{rf.Title, clsInsert}}), gutterRight)
		sb.preview(textRows(rf.Body, clsInsert), false)
	}
}

// header lays out a frame's number, kind and title in one column.
func (sb *sideBySide) header(f *Frame, title []seg) []line {
	label := seg{fmt.Sprintf("%6d %-12s ", f.Seq, f.Kind), clsFrame}
	ls := wrap(title, sb.col-frameLabelWidth)
	ls[0] = append(line{label}, ls[0]...)
	for i := 1; i < len(ls); i++ {
		ls[i] = append(line{{strings.Repeat(" ", frameLabelWidth), clsPlain}}, ls[i]...)
	}
	return ls
}

// body lays out the rows of a pair's body diff, folded as the options say.
func (sb *sideBySide) body(rs []row, gutter string) {
	for _, s := range bodyRows(rs, sb.o) {
		if s.skip > 0 {
			note := []line{{{strings.Repeat(" ", bodyIndent) + s.foldNote(), clsFaint}}}
			sb.emit(note, note, gutter)
			continue
		}
		sb.emit(sb.indent(rs[s.i].left), sb.indent(rs[s.i].right), gutter)
	}
}

// preview shows the first lines of a body only one side has.
func (sb *sideBySide) preview(rs []row, left bool) {
	rs, rest := preview(rs, sb.o.All)
	var cell []line
	for _, r := range rs {
		cell = append(cell, sb.indent(r.left)...)
	}
	if rest > 0 {
		cell = append(cell, line{{strings.Repeat(" ", bodyIndent) + shown{skip: rest, more: true}.foldNote(), clsFaint}})
	}
	if left {
		sb.emit(cell, nil, gutterLeft)
	} else {
		sb.emit(nil, cell, gutterRight)
	}
}

func (sb *sideBySide) indent(segs []seg) []line {
	ls := wrap(segs, sb.col-bodyIndent)
	pad := seg{strings.Repeat(" ", bodyIndent), clsPlain}
	for i := range ls {
		ls[i] = append(line{pad}, ls[i]...)
	}
	return ls
}
