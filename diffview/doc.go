// Package diffview aligns two timelines and renders them side by side. It is
// a pure renderer: data in, string out. It knows nothing of the engine
// (timeline.ForDiff builds its input from a tape), reads no tapes and
// imports nothing of Jukebox: Frame.Kind holds tapefmt's kind names as text.
// It knows nothing of Bubble Tea; callers pass colours in as Styles.
//
// TextDiff, the other renderer, is a unified diff (diff -u) of two texts:
// the engine's divergence reports and the frame view's file changes
// (timeline.Detail) use it.
//
// # Alignment
//
// A Timeline is a list of Frames. Each frame has a Signature (what it is:
// kind plus endpoint, tool name or file path), a Title and a Body (what it
// says). Compare pairs the frames of two timelines in two passes:
//
//  1. An LCS over whole frames (signature, title and body) anchors every
//     frame that is the same on both sides.
//  2. Between anchors, an LCS over signatures pairs frames that are the same
//     kind of thing but say something else (Changed); what is left over is
//     OnlyLeft or OnlyRight.
//
// The first pass keeps an inserted step from shifting every later pair out of
// line; the second makes a changed model or tool argument a changed pair, not
// a deletion plus an insertion. Both passes run Myers' O(ND) algorithm in
// linear space on interned integers, after setting aside the elements only
// one side has (they cannot be in any common subsequence). Past an edit
// distance of 1024 in one sub-problem the search settles for a good split
// instead of the best (GNU diff's heuristic), so even unrelated timelines
// align in bounded time. Two 10,000-frame timelines with 300 scattered edits
// align in about 4 ms (BenchmarkAlign10k), a 10,000-frame timeline and a
// shuffle of it in about 100 ms (BenchmarkAlign10kShuffled).
//
// Result.First is the first pair that is not Same. Compare then
// word-diffs the titles and bodies of changed pairs (go-diff's Myers diff
// over words encoded one rune each, then semantic cleanup) and sums each
// side (Totals: frames, steps, LLM calls, tokens, cost, latency, duration)
// and the delta.
//
// # Rendering
//
// SideBySide and Unified turn a Result into text; Result.Report into a value
// for encoding/json. By default runs of same frames fold into one line, a
// changed body shows its changed lines with one line of context, and a frame
// only one side has shows its first three lines; Options.All shows
// everything. Text is laid out first and styled after, so a style may colour
// text but not change its width; with Styles.Marks changed words are also
// bracketed [-so-] and {+so+}, for output without colour. Control characters
// in bodies print as Unicode control pictures, never reaching the terminal.
package diffview
