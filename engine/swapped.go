package engine

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"

	"github.com/jukebox-os/jukebox/llmwire"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// minSwapText is the shortest answer text or id the swap check replaces:
// shorter ones ("4", "yes") occur in output by chance.
const minSwapText = 4

// answerGroups are, for each set of recorded calls this replay served
// whose requests are identical (the same endpoint and canonical body) and
// whose answers differ, the texts that tell those answers apart: each
// answer's text and id. Threads that send identical requests at once reach jukebox in an
// order nothing controls, so such calls may get their answers swapped in
// replay; these are what may be swapped.
func (m *Matcher) answerGroups() [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var groups [][]string
	for _, cs := range m.calls {
		// Calls are told apart by the hashes of their canonical bodies;
		// answers are read for sets of two calls or more alone.
		sets := map[tapefmt.Hash][]*Call{}
		var order []tapefmt.Hash
		for _, c := range cs {
			if c.Plain || !c.used {
				continue // swapped answers are answers this replay gave too
			}
			k := m.canonKeyOf(c)
			if _, ok := sets[k]; !ok {
				order = append(order, k)
			}
			sets[k] = append(sets[k], c)
		}
		for _, k := range order {
			if len(sets[k]) < 2 {
				continue
			}
			var texts []string
			for _, c := range sets[k] {
				body, _ := m.responseBodyLocked(c) // an unreadable answer has no text to swap
				a := llmwire.ReadAnswer(body)
				for _, t := range []string{a.Text, a.ID} {
					if len(t) >= minSwapText && !slices.Contains(texts, t) {
						texts = append(texts, t)
					}
				}
			}
			if len(texts) > 1 {
				groups = append(groups, texts)
			}
		}
	}
	return groups
}

// compareSwapped compares the outputs as compareOutput does, the answers
// of each group taken as interchangeable: swapped is true when that makes
// them the same; otherwise the first line that still differs, as written.
func compareSwapped(recorded, replayed []byte, ignore []*regexp.Regexp, groups [][]string) (d *OutputDiff, swapped bool) {
	d = compareOutput(unswap(recorded, groups), unswap(replayed, groups), ignore)
	if d == nil {
		return nil, true
	}
	rec, rep := bytes.SplitAfter(recorded, []byte("\n")), bytes.SplitAfter(replayed, []byte("\n"))
	return &OutputDiff{Line: d.Line, Recorded: lineAt(rec, d.Line-1, ignore), Replayed: lineAt(rep, d.Line-1, ignore)}, false
}

// unswap replaces, in out, every text of each group by one placeholder of
// that group (longest texts first, so none is cut by a shorter one), so
// that outputs that differ only in which caller got which of identical
// requests' answers compare equal.
func unswap(out []byte, groups [][]string) []byte {
	for i, g := range groups {
		texts := slices.SortedFunc(slices.Values(g), func(a, b string) int { return len(b) - len(a) })
		ph := fmt.Appendf(nil, "\x00answer of identical requests %d\x00", i+1)
		for _, t := range texts {
			out = bytes.ReplaceAll(out, []byte(t), ph)
		}
	}
	return out
}
