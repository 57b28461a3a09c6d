package tui

import "github.com/charmbracelet/bubbles/key"

// One KeyMap per context. Bindings are switched off with SetEnabled when
// they would do nothing, so the help line only ever shows keys that work.

// deckKeys work everywhere on the deck (not in the form or a prompt).
type deckKeys struct {
	Quit, Help, Fork, Diff, Focus, Raw key.Binding
}

func newDeckKeys() deckKeys {
	return deckKeys{
		Quit:  key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:  key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "keys")),
		Fork:  key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "fork here")),
		Diff:  key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diff")),
		Focus: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		Raw:   key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "raw bytes")),
	}
}

// timelineKeys move the needle over a timeline.
type timelineKeys struct {
	Prev, Next, PrevStep, NextStep, Up, Down, PageUp, PageDown, Home, End, Goto key.Binding
	NextLLM, PrevLLM, NextTool, PrevTool, NextError, PrevError                  key.Binding
	Search, SearchNext, SearchPrev, Mark, NextMark, Play, Speed                 key.Binding
}

func newTimelineKeys() timelineKeys {
	b := func(keys []string, k, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(k, desc))
	}
	return timelineKeys{
		Prev:       b([]string{"left", "h"}, "←/h", "frame back"),
		Next:       b([]string{"right", "l"}, "→/l", "frame on"),
		PrevStep:   b([]string{"shift+left", "H"}, "⇧←/H", "step back"),
		NextStep:   b([]string{"shift+right", "L"}, "⇧→/L", "step on"),
		Up:         b([]string{"up", "k"}, "↑/k", "up"),
		Down:       b([]string{"down", "j"}, "↓/j", "down"),
		PageUp:     b([]string{"pgup", "ctrl+b"}, "pgup", "page up"),
		PageDown:   b([]string{"pgdown", "ctrl+f"}, "pgdn", "page down"),
		Home:       b([]string{"home"}, "home", "first frame"),
		End:        b([]string{"end", "G"}, "end/G", "last frame"),
		Goto:       b([]string{"g"}, "g", "go to frame"),
		NextLLM:    b([]string{"n"}, "n/N", "next/prev LLM call"),
		PrevLLM:    b([]string{"N"}, "N", "prev LLM call"),
		NextTool:   b([]string{"t"}, "t/T", "next/prev tool call"),
		PrevTool:   b([]string{"T"}, "T", "prev tool call"),
		NextError:  b([]string{"e"}, "e/E", "next/prev error"),
		PrevError:  b([]string{"E"}, "E", "prev error"),
		Search:     b([]string{"/"}, "/", "search"),
		SearchNext: b([]string{";"}, ";/,", "next/prev match"),
		SearchPrev: b([]string{","}, ",", "prev match"),
		Mark:       b([]string{"m"}, "m", "marker"),
		NextMark:   b([]string{"'"}, "'", "next marker"),
		Play:       b([]string{" "}, "space", "play"),
		Speed:      b([]string{"x"}, "x", "speed 1x/2x/8x"),
	}
}

// frameKeys scroll the frame view when it has the focus.
type frameKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom key.Binding
}

func newFrameKeys() frameKeys {
	return frameKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "scroll up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "scroll down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("end/G", "bottom")),
	}
}

// promptKeys answer the one-line prompts (go to frame, search).
type promptKeys struct{ Submit, Cancel key.Binding }

func newPromptKeys() promptKeys {
	return promptKeys{
		Submit: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go")),
		Cancel: key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
	}
}

// formKeys drive the fork form.
type formKeys struct{ Next, Prev, Submit, Newline, Cancel key.Binding }

func newFormKeys() formKeys {
	return formKeys{
		Next:    key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		Prev:    key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("⇧tab", "prev field")),
		Submit:  key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run fork")),
		Newline: key.NewBinding(key.WithKeys("ctrl+j", "alt+enter"), key.WithHelp("ctrl+j", "new line")),
		Cancel:  key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
	}
}

// forkKeys work while a fork runs.
type forkKeys struct{ Cancel key.Binding }

func newForkKeys() forkKeys {
	return forkKeys{Cancel: key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "stop fork"))}
}

// diffKeys scroll the diff pane; both columns move together.
type diffKeys struct {
	Up, Down, PageUp, PageDown, NextChange, PrevChange, Close key.Binding
}

func newDiffKeys() diffKeys {
	return diffKeys{
		Up:         key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:       key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:     key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown:   key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		NextChange: key.NewBinding(key.WithKeys("n", "right", "l"), key.WithHelp("n/→", "next change")),
		PrevChange: key.NewBinding(key.WithKeys("N", "left", "h"), key.WithHelp("N/←", "prev change")),
		Close:      key.NewBinding(key.WithKeys("esc", "d"), key.WithHelp("esc/d", "close diff")),
	}
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
