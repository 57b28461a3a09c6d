package main

import (
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
	"github.com/muesli/termenv"

	"github.com/jukebox-os/jukebox/themes"
)

// playColours picks the turntable's theme and renderer for the terminal
// out. NO_COLOR removes colour from the default theme (themes.Plain), but
// a theme asked for by name (--theme) keeps its colours: the person
// running play asked for them. background ("light", "dark", or "" to ask
// the terminal) overrides what the terminal says.
func playColours(out io.Writer, theme, background string, getenv func(string) string) (themes.Theme, *lipgloss.Renderer, error) {
	noColor := getenv("NO_COLOR") != "" && theme == ""
	th, err := themes.Get(theme)
	if theme == "" || noColor {
		th, err = themes.Diner(), nil
	}
	if noColor {
		th = themes.Plain()
	}
	if err != nil {
		return th, nil, err
	}
	r := playRenderer(out, noColor)
	switch background {
	case "light", "dark":
		r.SetHasDarkBackground(background == "dark")
	default: // ask the terminal now, before the program reads the keyboard
		if f, ok := out.(*os.File); ok && inMultiplexer(getenv) {
			r.SetHasDarkBackground(multiplexerDark(f, getenv))
		} else {
			r.HasDarkBackground()
		}
	}
	return th, r, nil
}

// playRenderer renders for the terminal out. NO_COLOR forbids colour, not
// bold or reverse video: termenv reads it as "no styling at all", which
// left the needle's row unmarked, so with it the profile is plain ANSI and
// the theme (themes.Plain) has no colour to give. Whether out is a
// terminal is asked of out itself: termenv takes any CI variable in the
// environment for "not a terminal" and draws without colour or marks.
func playRenderer(out io.Writer, noColor bool) *lipgloss.Renderer {
	r := lipgloss.NewRenderer(out, termenv.WithTTY(isTerminal(out)))
	if noColor {
		r.SetColorProfile(termenv.ANSI)
	}
	return r
}

// isTerminal reports whether out is a terminal.
func isTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// multiplexerDark asks the multiplexer on f for its background (OSC 11)
// and says whether it is dark. A query that fails at once (termenv then
// gives ANSI black, what it gives when nothing answers; seen on a loaded
// machine) is asked again, twice at most; one that waited for its answer
// is not, so a multiplexer that never answers costs one wait.
func multiplexerDark(f *os.File, getenv func(string) string) bool {
	for try := 0; ; try++ {
		o := termenv.NewOutput(f, termenv.WithEnvironment(asXterm{getenv}), termenv.WithTTY(isTerminal(f)))
		start := time.Now()
		bg := o.BackgroundColor()
		if bg != termenv.ANSIColor(0) || try == 2 || time.Since(start) > 500*time.Millisecond {
			return o.HasDarkBackground()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inMultiplexer reports whether TERM names tmux or screen. termenv does
// not ask them for the background (they may show a session on several
// terminals at once), so a light terminal got the dark palette; tmux
// answers the question (OSC 11) with its pane's background, learnt from the
// terminal it runs in, and one that does not answer leaves the default.
func inMultiplexer(getenv func(string) string) bool {
	t := getenv("TERM")
	return strings.HasPrefix(t, "tmux") || strings.HasPrefix(t, "screen")
}

// asXterm is the environment with TERM=xterm-256color, for termenv to ask
// a multiplexer for its background.
type asXterm struct{ getenv func(string) string }

// Environ returns the process's environment, TERM left out.
func (e asXterm) Environ() []string { return os.Environ() }

// Getenv returns the variable k, xterm-256color for TERM.
func (e asXterm) Getenv(k string) string {
	if k == "TERM" {
		return "xterm-256color"
	}
	return e.getenv(k)
}
