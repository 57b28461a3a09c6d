package diffview

// Styles decorates the parts of a rendering. Each function takes plain text
// and returns it decorated; a nil function leaves the text as it is. The
// renderers lay text out before decorating it, so a decoration must not
// change the text's width on screen: colours and attributes only (the TUI
// passes lipgloss styles' Render methods; the CLI passes ANSIStyles or
// PlainStyles).
type Styles struct {
	Header     func(string) string // the timeline names and totals
	Frame      func(string) string // frame numbers and kinds
	Faint      func(string) string // same frames, collapsed runs, unchanged context
	Delete     func(string) string // words and frames only on the left
	Insert     func(string) string // words and frames only on the right
	Divergence func(string) string // the first-divergence banner
	// Marks wraps changed words in [-…-] and {+…+}, so that a diff printed
	// without colour still shows them. The marks are counted in the layout.
	Marks bool
}

// PlainStyles marks changed words with brackets and uses no colour: for
// pipes, files, NO_COLOR and golden tests.
func PlainStyles() Styles { return Styles{Marks: true} }

// ANSIStyles uses the 16 basic terminal colours: red for the left side's
// changes, green for the right's, bold for frames, faint for sameness.
func ANSIStyles() Styles {
	return Styles{
		Header:     sgr("1"),
		Frame:      sgr("1"),
		Faint:      sgr("2"),
		Delete:     sgr("31"),
		Insert:     sgr("32"),
		Divergence: sgr("1;33"),
	}
}

func sgr(code string) func(string) string {
	return func(s string) string {
		if s == "" {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
}

func (st Styles) apply(c class, s string) string {
	var f func(string) string
	switch c {
	case clsHeader:
		f = st.Header
	case clsFrame:
		f = st.Frame
	case clsFaint:
		f = st.Faint
	case clsDelete:
		f = st.Delete
	case clsInsert:
		f = st.Insert
	case clsDivergence:
		f = st.Divergence
	}
	if f == nil || s == "" {
		return s
	}
	return f(s)
}

// marked returns the text of a changed span as the layout should place it.
func (st Styles) marked(op SpanOp, s string) string {
	if !st.Marks {
		return s
	}
	switch op {
	case Delete:
		return "[-" + s + "-]"
	case Insert:
		return "{+" + s + "+}"
	}
	return s
}
