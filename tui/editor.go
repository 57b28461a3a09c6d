package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// field is a small text field, one line or several: enough for a frame
// number, a search, a model name, a system prompt and a JSON patch. (The
// bubbles text input and text area would pull in a clipboard module the
// build does not carry; these fields need none of it.)
type field struct {
	Label, Placeholder string
	Multi              bool
	lines              [][]rune
	row, col           int
	keys               editKeys
}

func newField(label, placeholder string, multi bool) field {
	return field{Label: label, Placeholder: placeholder, Multi: multi, lines: [][]rune{nil}, keys: newEditKeys()}
}

// Value returns the text.
func (f *field) Value() string {
	parts := make([]string, len(f.lines))
	for i, l := range f.lines {
		parts[i] = string(l)
	}
	return strings.Join(parts, "\n")
}

// SetValue replaces the text and puts the cursor at its end.
func (f *field) SetValue(s string) {
	f.lines = nil
	for _, l := range strings.Split(s, "\n") {
		f.lines = append(f.lines, []rune(l))
	}
	if !f.Multi {
		f.lines = [][]rune{[]rune(strings.ReplaceAll(s, "\n", " "))}
	}
	f.row = len(f.lines) - 1
	f.col = len(f.lines[f.row])
}

// Newline splits the line at the cursor (multi-line fields only).
func (f *field) Newline() {
	if !f.Multi {
		return
	}
	l := f.lines[f.row]
	rest := append([]rune(nil), l[f.col:]...)
	f.lines[f.row] = l[:f.col]
	f.lines = append(f.lines[:f.row+1], append([][]rune{rest}, f.lines[f.row+1:]...)...)
	f.row, f.col = f.row+1, 0
}

// update edits the text for one key.
func (f *field) update(msg tea.KeyMsg) {
	l := f.lines[f.row]
	switch {
	case msg.Type == tea.KeyRunes || msg.Type == tea.KeySpace:
		ins := msg.Runes
		if msg.Type == tea.KeySpace {
			ins = []rune{' '}
		}
		for _, r := range ins {
			if r == '\n' || r == '\r' {
				f.Newline()
				continue
			}
			l = f.lines[f.row]
			f.lines[f.row] = append(l[:f.col], append([]rune{r}, l[f.col:]...)...)
			f.col++
		}
	case key.Matches(msg, f.keys.Backspace):
		f.backspace()
	case key.Matches(msg, f.keys.Delete):
		if f.col < len(l) {
			f.lines[f.row] = append(l[:f.col], l[f.col+1:]...)
		}
	default:
		f.move(msg)
	}
}

func (f *field) backspace() {
	l := f.lines[f.row]
	switch {
	case f.col > 0:
		f.lines[f.row] = append(l[:f.col-1], l[f.col:]...)
		f.col--
	case f.row > 0:
		prev := f.lines[f.row-1]
		f.col = len(prev)
		f.lines[f.row-1] = append(prev, l...)
		f.lines = append(f.lines[:f.row], f.lines[f.row+1:]...)
		f.row--
	}
}

func (f *field) move(msg tea.KeyMsg) {
	switch {
	case key.Matches(msg, f.keys.Left):
		f.col = max(f.col-1, 0)
	case key.Matches(msg, f.keys.Right):
		f.col = min(f.col+1, len(f.lines[f.row]))
	case key.Matches(msg, f.keys.Up) && f.row > 0:
		f.row--
	case key.Matches(msg, f.keys.Down) && f.row < len(f.lines)-1:
		f.row++
	case key.Matches(msg, f.keys.Home):
		f.col = 0
	case key.Matches(msg, f.keys.End):
		f.col = len(f.lines[f.row])
	case key.Matches(msg, f.keys.Clear):
		f.lines[f.row], f.col = nil, 0
	}
	f.col = min(f.col, len(f.lines[f.row]))
}

// view draws the field h lines tall and w cells wide, with a block cursor
// when focused; it scrolls so the cursor line is shown.
func (f *field) view(st Styles, w, h int, focused bool) []string {
	style := st.Field
	if focused {
		style = st.FieldFocused
	}
	if f.Value() == "" && !focused {
		return []string{st.Muted.Render(fit(f.Placeholder, w))}
	}
	first := max(0, f.row-h+1)
	var out []string
	for i := first; i < len(f.lines) && len(out) < h; i++ {
		l := termtext.Sanitize(string(f.lines[i]))
		if focused && i == f.row {
			r := []rune(l)
			c := min(f.col, len(r))
			start := max(0, c-max(w, 2)+2) // keep the cursor in view (a screen narrower than 2: at it)
			vis := r[start:]
			c -= start
			cur := " "
			if c < len(vis) {
				cur = string(vis[c])
			}
			out = append(out, style.Render(string(vis[:c]))+st.Selected.Render(cur)+style.Render(string(vis[min(c+1, len(vis)):])))
			continue
		}
		out = append(out, style.Render(l))
	}
	return out
}

// editKeys move the cursor inside a text field.
type editKeys struct{ Left, Right, Up, Down, Home, End, Backspace, Delete, Clear key.Binding }

func newEditKeys() editKeys {
	return editKeys{
		Left:      key.NewBinding(key.WithKeys("left", "ctrl+b")),
		Right:     key.NewBinding(key.WithKeys("right", "ctrl+f")),
		Up:        key.NewBinding(key.WithKeys("up")),
		Down:      key.NewBinding(key.WithKeys("down")),
		Home:      key.NewBinding(key.WithKeys("home", "ctrl+a")),
		End:       key.NewBinding(key.WithKeys("end", "ctrl+e")),
		Backspace: key.NewBinding(key.WithKeys("backspace", "ctrl+h")),
		Delete:    key.NewBinding(key.WithKeys("delete", "ctrl+d")),
		Clear:     key.NewBinding(key.WithKeys("ctrl+u")),
	}
}
