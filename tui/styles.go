package tui

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/themes"
	"github.com/jukebox-os/jukebox/timeline"
)

// Styles are every style the turntable draws with, made once from a
// themes.Theme and passed down to each component. Nothing else in the
// package makes a style.
type Styles struct {
	Theme themes.Theme

	Header, HeaderDim       lipgloss.Style // the top bar
	Title, TitleFocused     lipgloss.Style // a pane's title line
	Text, Muted, Accent     lipgloss.Style
	Selected                lipgloss.Style // the cursor row
	Match                   lipgloss.Style // the last search's text in the frame view
	Cursor                  lipgloss.Style // the cursor glyph in the gutter
	Rule                    lipgloss.Style // step boundaries
	LLM, Tool, File, Output lipgloss.Style
	Error, Warn, Fork       lipgloss.Style
	Marker, Insert          lipgloss.Style
	Role                    lipgloss.Style // message roles in the frame view
	Needle, Played, Unseen  lipgloss.Style // the scrubber bar
	Status                  lipgloss.Style
	Field, FieldFocused     lipgloss.Style // the fork form
	Help                    help.Styles
	Diff                    diffview.Styles
}

// NewStyles turns a palette into styles for renderer r (its colour profile
// decides what reaches the terminal; its background whether the light or
// dark variant of each colour is used).
func NewStyles(th themes.Theme, r *lipgloss.Renderer) Styles {
	fg := func(c themes.Color) lipgloss.Style {
		s := r.NewStyle()
		if !c.IsZero() {
			s = s.Foreground(lipgloss.AdaptiveColor{Light: c.Light, Dark: c.Dark})
		}
		return s
	}
	bg := func(s lipgloss.Style, c themes.Color) lipgloss.Style {
		if c.IsZero() {
			return s.Reverse(true)
		}
		return s.Background(lipgloss.AdaptiveColor{Light: c.Light, Dark: c.Dark})
	}
	st := Styles{Theme: th,
		Text: fg(th.Text), Muted: fg(th.Muted).Faint(th.Colourless), Accent: fg(th.Accent).Bold(true),
		Rule: fg(th.Step).Faint(th.Colourless), LLM: fg(th.LLM), Tool: fg(th.Tool), File: fg(th.File),
		Output: fg(th.Output), Error: fg(th.Error).Bold(true), Warn: fg(th.Warn).Bold(true),
		Fork: fg(th.Fork).Bold(true), Marker: fg(th.Marker).Bold(true), Insert: fg(th.Insert),
		Role: fg(th.Accent).Bold(true), Needle: fg(th.Accent).Bold(true), Played: fg(th.Accent),
		Unseen: fg(th.Muted).Faint(th.Colourless), Cursor: fg(th.Accent).Bold(true),
	}
	st.Header = bg(fg(th.BarText).Bold(true), th.Bar)
	st.HeaderDim = bg(fg(th.BarText), th.Bar)
	st.Status = fg(th.Muted)
	st.Title = fg(th.Muted).Bold(true)
	st.TitleFocused = fg(th.Accent).Bold(true).Underline(th.Colourless)
	st.Selected = bg(r.NewStyle(), th.Highlight).Bold(true)
	st.Match = r.NewStyle().Reverse(true).Bold(true)
	st.Field = fg(th.Text)
	st.FieldFocused = fg(th.Accent)
	st.Help = help.Styles{
		ShortKey: fg(th.Accent).Bold(true), ShortDesc: fg(th.Muted), ShortSeparator: fg(th.Muted),
		FullKey: fg(th.Accent).Bold(true), FullDesc: fg(th.Text), FullSeparator: fg(th.Muted),
		Ellipsis: fg(th.Muted),
	}
	st.Diff = diffview.Styles{Header: render(st.Accent), Frame: render(r.NewStyle().Bold(true)),
		Faint: render(st.Muted), Delete: render(st.Error), Insert: render(st.Insert), Divergence: render(st.Warn),
		Marks: th.Colourless || r.ColorProfile() == termenv.Ascii}
	return st
}

func render(s lipgloss.Style) func(string) string {
	return func(t string) string { return s.Render(t) }
}

// Kind is the style of a frame kind's rows.
func (st Styles) Kind(k timeline.Kind) lipgloss.Style {
	switch k {
	case timeline.KindLLMRequest, timeline.KindLLMResponse:
		return st.LLM
	case timeline.KindToolCall, timeline.KindToolResult, timeline.KindMCP,
		timeline.KindHTTPRequest, timeline.KindHTTPResponse, timeline.KindNetConn:
		return st.Tool
	case timeline.KindFileChange, timeline.KindTxBegin, timeline.KindTxCommit, timeline.KindTxRollback:
		return st.File
	case timeline.KindOutput:
		return st.Output
	case timeline.KindBreakerTrip, timeline.KindNetRefused:
		return st.Error
	case timeline.KindMarker:
		return st.Marker
	case timeline.KindStep, timeline.KindClock, timeline.KindSeed:
		return st.Muted
	}
	return st.Text
}

// glyphs are the one-cell signs of each frame kind in the timeline.
var glyphs = map[timeline.Kind]string{
	timeline.KindRunStart: "◉", timeline.KindRunEnd: "◎", timeline.KindStep: "─",
	timeline.KindLLMRequest: "»", timeline.KindLLMResponse: "«", timeline.KindToolCall: "ƒ",
	timeline.KindToolResult: "↲", timeline.KindMCP: "⇄", timeline.KindFileChange: "✎",
	timeline.KindOutput: "›", timeline.KindClock: "·", timeline.KindSeed: "·",
	timeline.KindTxBegin: "⊏", timeline.KindTxCommit: "⊐", timeline.KindTxRollback: "↶",
	timeline.KindBreakerTrip: "‼", timeline.KindAgentTurn: "≡", timeline.KindMarker: "⚑",
	timeline.KindNetRefused: "⊘", timeline.KindHTTPRequest: "↗", timeline.KindHTTPResponse: "↙",
	timeline.KindNetConn: "⇋", timeline.KindControl: "⇅", timeline.KindSnapshot: "▣",
}

// Glyph returns the sign of kind k.
func Glyph(k timeline.Kind) string {
	if g, ok := glyphs[k]; ok {
		return g
	}
	return "?"
}
