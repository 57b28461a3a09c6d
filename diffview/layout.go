package diffview

import (
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// class says how a piece of text is styled.
type class uint8

const (
	clsPlain class = iota
	clsHeader
	clsFrame
	clsFaint
	clsDelete
	clsInsert
	clsDivergence
)

// seg is a run of text of one class.
type seg struct {
	text string
	cls  class
}

// line is one row of output as segments, before styling.
type line []seg

func (l line) width() int {
	w := 0
	for _, s := range l {
		w += runewidth.StringWidth(s.text)
	}
	return w
}

// render styles each segment and pads the line to width w (when w > 0).
func (l line) render(st Styles, w int) string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(st.apply(s.cls, s.text))
	}
	if pad := w - l.width(); w > 0 && pad > 0 {
		b.WriteString(strings.Repeat(" ", pad))
	}
	return b.String()
}

// wrap lays segments out in lines at most w cells wide: breaks at newlines,
// wraps between words, and splits a word longer than a line.
func wrap(segs []seg, w int) []line {
	w = max(w, 1)
	var out []line
	var cur line
	cw := 0
	breakLine := func() {
		out = append(out, cur)
		cur, cw = nil, 0
	}
	for _, s := range segs {
		text := sanitize(s.text)
		for len(text) > 0 {
			n := pieceLen(text)
			piece := text[:n]
			text = text[n:]
			switch pw := runewidth.StringWidth(piece); {
			case piece == "\n":
				breakLine()
			case cw+pw <= w:
				cur, cw = appendSeg(cur, piece, s.cls), cw+pw
			case isBlank(piece):
				breakLine() // a wrap swallows the blanks it falls on
			case pw <= w:
				breakLine()
				cur, cw = appendSeg(cur, piece, s.cls), pw
			default:
				cur, cw, out = splitWord(cur, cw, out, piece, s.cls, w)
			}
		}
	}
	if len(cur) > 0 || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// splitWord places a word wider than a line rune by rune.
func splitWord(cur line, cw int, out []line, word string, cls class, w int) (line, int, []line) {
	start := 0
	for i, r := range word {
		rw := runewidth.RuneWidth(r)
		if cw+rw > w && (cw > 0 || i > start) {
			cur = appendSeg(cur, word[start:i], cls)
			out = append(out, cur)
			cur, cw, start = nil, 0, i
		}
		cw += rw
	}
	return appendSeg(cur, word[start:], cls), cw, out
}

func appendSeg(l line, text string, cls class) line {
	if text == "" {
		return l
	}
	if n := len(l); n > 0 && l[n-1].cls == cls {
		l[n-1].text += text
		return l
	}
	return append(l, seg{text, cls})
}

// pieceLen is the byte length of the newline, blank run or word at the
// start of s.
func pieceLen(s string) int {
	if s[0] == '\n' {
		return 1
	}
	blank := s[0] == ' '
	for i, r := range s {
		if r == '\n' || (r == ' ') != blank {
			return i
		}
	}
	return len(s)
}

func isBlank(s string) bool { return strings.Trim(s, " ") == "" }

// sanitize makes text safe for a terminal cell grid: tabs become four
// spaces, carriage returns go, emoji sequences terminals draw at different
// widths are made uniform (termtext.Uniform), and the rest is shown as
// termtext.Sanitize shows it: C0 controls as their Unicode pictures (an
// escape sequence in an agent's output prints as text), C1 controls, bidi
// controls and invisible characters as �. It mapped C0 and DEL alone: a
// tape's U+009B (the 8-bit CSI) reached the terminal from the diff pane
// and jukebox diff.
func sanitize(s string) string {
	s = termtext.Uniform(s)
	if strings.ContainsAny(s, "\t\r") {
		s = tabsAndReturns.Replace(s)
	}
	return termtext.Sanitize(s)
}

var tabsAndReturns = strings.NewReplacer("\t", "    ", "\r", "")

// truncate cuts plain text to at most w cells, ending in "…" when cut.
func truncate(s string, w int) string {
	s = sanitize(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if runewidth.StringWidth(s) <= w {
		return s
	}
	return runewidth.Truncate(s, w, "…")
}
