package diffview

import (
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// unifiedIndent is where body lines start in Unified: under the kind.
const unifiedIndent = 15

// Unified renders r as one column, like a unified diff of the two
// timelines: each shown pair is a line starting with " " (same), "~"
// (changed), "-" (only on the left) or "+" (only on the right), then the
// frame numbers on each side, the kind and the title. A changed pair's title
// and body show the word diff inline, deleted words [-so-] and inserted ones
// {+so+} (or in colour). Folding follows o as in SideBySide; lines are not
// wrapped.
func Unified(r *Result, o Options) string {
	u := &unified{r: r, o: o}
	st := o.Styles
	u.b.WriteString(st.apply(clsHeader, "--- left: "+r.Left.Name) + "  " + st.apply(clsFaint, summary(r.LeftTotals)) + "\n")
	u.b.WriteString(st.apply(clsHeader, "+++ right: "+r.Right.Name) + "  " + st.apply(clsFaint, summary(r.RightTotals)) + "\n")
	return walk(r, o, u, &u.b)
}

// fold writes one line for n same pairs from pair i.
func (u *unified) fold(i, n int) {
	r, first, last := u.r, u.r.Pairs[i], u.r.Pairs[i+n-1]
	u.line(seg{fmt.Sprintf("  ⋯ %s (left %d–%d, right %d–%d)", termtext.Count(n, "same frame", "same frames"),
		r.Left.Frames[first.Left].Seq, r.Left.Frames[last.Left].Seq,
		r.Right.Frames[first.Right].Seq, r.Right.Frames[last.Right].Seq), clsFaint})
}

// banner writes one line.
func (u *unified) banner(s seg) { u.line(s) }

type unified struct {
	r *Result
	o Options
	b strings.Builder
}

func (u *unified) line(segs ...seg) {
	u.b.WriteString(strings.TrimRight(line(segs).render(u.o.Styles, 0), " ") + "\n")
}

func (u *unified) pair(p Pair) {
	var f Frame
	ls, rs := "·", "·"
	if p.Left >= 0 {
		f = u.r.Left.Frames[p.Left]
		ls = fmt.Sprint(f.Seq)
	}
	if p.Right >= 0 {
		f = u.r.Right.Frames[p.Right]
		rs = fmt.Sprint(f.Seq)
	}
	mark, cls := unifiedMarks[p.Op], unifiedClasses[p.Op]
	title := []seg{{f.Title, cls}}
	if p.Op == Changed && p.Title != nil {
		title = diffRows(p.Title, u.o.Styles)[0].inline
	}
	u.line(append([]seg{{fmt.Sprintf("%s %5s %5s  ", mark, ls, rs), cls}, {fmt.Sprintf("%-12s ", f.Kind), clsFrame}}, title...)...)
	u.body(p, f, cls)
}

var (
	unifiedMarks   = [...]string{Same: " ", Changed: "~", OnlyLeft: "-", OnlyRight: "+"}
	unifiedClasses = [...]class{Same: clsFaint, Changed: clsPlain, OnlyLeft: clsDelete, OnlyRight: clsInsert}
)

// body writes a pair's body lines under its title: the word diff of a
// changed pair, the first lines of a one-sided one, all of a same one with
// Options.All.
func (u *unified) body(p Pair, f Frame, cls class) {
	pad := seg{strings.Repeat(" ", unifiedIndent), clsPlain}
	switch p.Op {
	case Changed:
		rs := changedRows(p, &f, u.o.Styles)
		for _, s := range bodyRows(rs, u.o) {
			u.rowLines(pad, s, rs)
		}
	case OnlyLeft, OnlyRight:
		rs, rest := preview(textRows(f.Body, cls), u.o.All)
		for i := range rs {
			u.rowLines(pad, shown{i: i}, rs)
		}
		if rest > 0 {
			u.rowLines(pad, shown{skip: rest, more: true}, nil)
		}
	case Same:
		if u.o.All {
			rs := textRows(f.Body, clsFaint)
			for i := range rs {
				u.rowLines(pad, shown{i: i}, rs)
			}
		}
	}
}

// rowLines writes one shown body row, which may hold line breaks inside
// changed words, or the note for a folded run.
func (u *unified) rowLines(pad seg, s shown, rs []row) {
	if s.skip > 0 {
		u.line(pad, seg{s.foldNote(), clsFaint})
		return
	}
	for _, l := range wrap(rs[s.i].inline, 1<<30) {
		u.line(append(line{pad}, l...)...)
	}
}
