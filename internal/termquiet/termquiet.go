// Package termquiet keeps package initialisation from querying the
// terminal. Bubble Tea v1 asks the terminal for its background colour
// when its package is initialised (tea_init.go: lipgloss's
// HasDarkBackground, an OSC 11 query and a cursor-position request, then
// up to five seconds for the answer), so every jukebox command, --version
// included, wrote those requests to its terminal and, where nothing
// answered them (script, expect, a terminal an editor or a CI runner
// makes), waited five seconds before doing anything.
//
// Go initialises a package after the packages it imports and, among the
// packages ready at once, the one whose import path sorts first. This one
// imports only os, so it is initialised before termenv
// (github.com/muesli/termenv, which every terminal query goes through):
// when the standard output is a terminal it sets TERM to "dumb", which
// termenv never queries, and main calls Restore before anything else to
// put TERM back. The turntable asks the terminal itself, with TERM as it
// is, before its program reads the keyboard (cmd/jukebox playColours).
// TestNoTerminalQueryAtStart holds the order and the effect.
package termquiet

import "os"

// saved is TERM as it was, when init hid it.
var saved *struct {
	value string
	set   bool
}

func init() {
	if st, err := os.Stdout.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return // not a terminal: nothing queries it
	}
	value, set := os.LookupEnv("TERM")
	saved = &struct {
		value string
		set   bool
	}{value, set}
	os.Setenv("TERM", "dumb")
}

// Restore puts TERM back as it was before init hid it.
func Restore() {
	if saved == nil {
		return
	}
	if saved.set {
		os.Setenv("TERM", saved.value)
	} else {
		os.Unsetenv("TERM")
	}
	saved = nil
}
