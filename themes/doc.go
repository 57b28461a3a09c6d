// Package themes holds the named colour palettes of the turntable.
//
// A Theme is data only: colours as strings that lipgloss understands ("#RRGGBB"
// or an ANSI number), each with a variant for light and one for dark
// terminals. The tui package turns a Theme into lipgloss styles; this package
// imports nothing, so the CLI can use the same palettes for headless output.
//
// Three themes ship: "diner" (the default: cherry red, mint, mustard and
// chrome on whatever background the terminal has), "plain" (no colour at
// all; emphasis by bold, faint and reverse video only, which is also what
// NO_COLOR selects) and "high-contrast" (pure black or white text and the
// brightest primaries, for low vision and washed-out projectors).
package themes
