package themes

import (
	"fmt"
	"slices"
	"strings"
)

// Color is one colour with a variant for light and one for dark terminal
// backgrounds. An empty Color means "the terminal's own": no colour is set.
type Color struct {
	Light string `json:"light,omitempty"`
	Dark  string `json:"dark,omitempty"`
}

// IsZero reports whether c sets no colour.
func (c Color) IsZero() bool { return c.Light == "" && c.Dark == "" }

// Theme is a named palette. Roles, not hues: the UI asks for Error, not red.
type Theme struct {
	Name string
	// Colourless themes rely on bold, faint and reverse video alone.
	Colourless bool

	Text      Color // body text
	Muted     Color // secondary text: times, hashes, folded runs
	Accent    Color // the needle, titles, the focused border
	Highlight Color // background of the selected row
	Bar       Color // the header and status bar background
	BarText   Color // text on Bar

	LLM    Color // llm.request and llm.response rows
	Tool   Color // tool calls and results, MCP
	File   Color // file changes and booth transactions
	Output Color // the agent's stdout and stderr
	Step   Color // step boundaries
	Error  Color // errors, failed calls, breaker trips, removed lines
	Warn   Color // warnings: torn tapes, unpriced models
	Fork   Color // forks and the fork timeline
	Marker Color // user markers
	Insert Color // added lines and words
}

// names lists the themes in the order --theme shows them; the first is the
// default.
func names() []string { return []string{"diner", "plain", "high-contrast"} }

// Default is the theme used when none is asked for.
func Default() Theme { return Diner() }

// Get returns the theme called name, or an error listing the known names.
func Get(name string) (Theme, error) {
	switch strings.ToLower(name) {
	case "", "diner":
		return Diner(), nil
	case "plain":
		return Plain(), nil
	case "high-contrast":
		return highContrast(), nil
	}
	return Theme{}, fmt.Errorf("themes: unknown theme %q (known: %s)", name, strings.Join(names(), ", "))
}

// known reports whether name is a theme.
func known(name string) bool { return slices.Contains(names(), strings.ToLower(name)) }

// Diner is the default theme: a 1950s diner in cherry red, mint, mustard
// and chrome. Light variants are darker so they read on a cream background.
func Diner() Theme {
	return Theme{
		Name:      "diner",
		Text:      Color{"#2B2B2B", "#F4ECD8"},
		Muted:     Color{"#7A7468", "#8F8A80"},
		Accent:    Color{"#C8102E", "#FF4F5E"},
		Highlight: Color{"#F2D9C4", "#3A2F33"},
		Bar:       Color{"#C8102E", "#8E1B28"},
		BarText:   Color{"#FFF8E7", "#FFF8E7"},
		LLM:       Color{"#0F7B6C", "#7FE0C8"},
		Tool:      Color{"#A86B00", "#F2C14E"},
		File:      Color{"#3E5C9A", "#9DB7F0"},
		Output:    Color{"#5E5A52", "#C9C2B2"},
		Step:      Color{"#9A948A", "#6E6A62"},
		Error:     Color{"#B00020", "#FF6B6B"},
		Warn:      Color{"#B35C00", "#FFB454"},
		Fork:      Color{"#7B2CBF", "#D0A2FF"},
		Marker:    Color{"#C2185B", "#FF8AC8"},
		Insert:    Color{"#1B7F3B", "#8FE39B"},
	}
}

// Plain is the colourless theme: the terminal's own colours, with bold,
// faint and reverse video for emphasis. NO_COLOR selects it.
func Plain() Theme { return Theme{Name: "plain", Colourless: true} }

// highContrast uses the strongest foreground for text and saturated
// primaries for kinds, on the terminal's own background.
func highContrast() Theme {
	fg := Color{"#000000", "#FFFFFF"}
	return Theme{
		Name:      "high-contrast",
		Text:      fg,
		Muted:     fg,
		Accent:    Color{"#0000CC", "#FFFF00"},
		Highlight: Color{"#FFFF00", "#0000AA"},
		Bar:       fg,
		BarText:   Color{"#FFFFFF", "#000000"},
		LLM:       Color{"#0000CC", "#00FFFF"},
		Tool:      Color{"#6B3A00", "#FFFF00"},
		File:      Color{"#006600", "#00FF00"},
		Output:    fg,
		Step:      fg,
		Error:     Color{"#CC0000", "#FF5555"},
		Warn:      Color{"#AA00AA", "#FF55FF"},
		Fork:      Color{"#AA00AA", "#FF55FF"},
		Marker:    Color{"#CC0000", "#FF5555"},
		Insert:    Color{"#006600", "#00FF00"},
	}
}
