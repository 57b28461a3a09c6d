// Package tui is the turntable: the Bubble Tea program behind `jukebox play`.
//
// The Deck is the root model. It owns the layout and routes messages; the
// panes do the work. Each pane is a Component (common.go): it draws itself,
// knows its keys and is told its size, and its file holds all of it
// (model, key map, update, view). A modal pane (prompt, fork form, diff)
// answers a key with a verdict, and the deck reads the pane's answer and
// carries it out. The panes:
//
//   - timelineView (timeline.go): one row per frame (time, stream, kind
//     glyph, summary, tokens, cost), step boundaries drawn as rules, forks
//     (⑂), breaker trips (‼), errors (!), markers (◆) and the first
//     divergence (≠) in the gutter. It is virtualised over
//     timeline.Timeline: only the rows on screen are decoded, so every key
//     costs the same on any tape. Its rows are a timeline.View: runs of
//     output folded (z, Z), one kind of frame kept (F), or one row per
//     step (S); the needle is always a frame number.
//   - scrubber (scrubber.go): the bar across the run by time, with the
//     needle, step ticks, markers, the fork point and the first
//     divergence; under it the step, frame, time, cost and tokens so far,
//     and the playback state.
//   - frameView (frameview.go): the frame under the needle in full; `r` for
//     the raw payload, offsets and blob hashes.
//   - prompt (prompt.go: go to frame, search), forkForm (forkform.go, its
//     text fields in editor.go), diffPane (diffpane.go).
//
// The deck's own files are deck*.go: routing (deck.go), the layout and
// mouse (deck_layout.go), the help (deck_help.go), and what the deck
// carries out for the panes: searches (deck_search.go), forks
// (deck_fork.go, with forkRun in forkrun.go), the diff (deck_diff.go),
// playback (deck_play.go, with player in play.go) and the background
// check of each tape (deck_check.go).
//
// Keys are one KeyMap per context, beside the pane that owns them; bindings
// that would do nothing are disabled, so the help line shows only keys that
// work now (the help overlay lists them too, marked "(not now)"). Styles
// come from a themes.Theme through NewStyles and are passed down; there are
// no package-level styles. NO_COLOR is honoured by the caller choosing the
// plain theme (cmd/jukebox/play.go).
//
// Long work runs in a tea.Cmd and comes back as a typed message: searches,
// the diff alignment, and engine.Fork, whose events reach the program
// through tea.Program.Send (Deck.SetSend). The fork's tape is re-opened as
// it grows (a tape without a footer opens up to its last whole step) and
// shown as a second timeline.
//
// Imports point one way (ARCHITECTURE.md, held by internal/deptest): tui
// reads tapes only through timeline (the read side; tui imports no tapefmt) and runs agents only through engine (engine.Fork), and neither of
// those packages imports it. cmd/jukebox is its only importer. The one
// process it starts is the user's pager or editor, and the one file it
// writes one the user names (takeout.go: o, v, y, w).
//
// Decisions: the turntable never writes to a tape (a tape is append-only
// and hashed); markers set with `m` are kept beside it, in
// NAME.jbx.d/markers.json (Options.KeepMarkers). Keys that reach the
// program in one read ("nn" typed fast) are split and count one by one.
// Under TERM=xterm*, lipgloss asks the terminal for its background colour
// before the program starts; keys typed in that instant are lost.
package tui
