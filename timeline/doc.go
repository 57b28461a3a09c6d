// Package timeline is the read side of jukebox: the view model over a tape
// that the turntable, `jukebox diff`, `ls` and `show` share, and the text
// helpers they print with.
//
//   - Timeline is one tape as rows, read lazily (Open, Row, Detail), with
//     running totals of tokens and cost, navigation by kind (Next), text
//     search and a whole-tape check (Check) that lists every damaged
//     frame instead of stopping at the first.
//   - ForDiff turns a tape's frames into the frames diffview aligns.
//   - Summarize is what `ls` shows of a run; Describe is a payload in one
//     line.
//   - OneLine, Sanitize, Clock and USD are text as jukebox shows it on a
//     terminal. Everything shown comes from a tape, so control characters
//     never reach the terminal as they are.
//
// Every view finds a call's tokens, model and cost by llmwire.ResponseUsage,
// the function the runner's live fork counter uses too, so they agree.
//
// Imports point one way (ARCHITECTURE.md, held by internal/deptest): cmd,
// tui and tapestore import timeline, which imports llmwire, prices,
// diffview and tapefmt. timeline only reads tapes: it never imports engine
// (the runner), Bubble Tea, lipgloss or kong. It gives the turntable what
// it needs of the format (the kind names, IsRemote, DamageOf, Command), so
// that tui never imports tapefmt.
package timeline
