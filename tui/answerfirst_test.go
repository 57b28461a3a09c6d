package tui

import (
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/timeline"
)

// TestResponseOpensAtTheAnswer: a response frame opens scrolled to its
// answer, the context above it (k or pgup scrolls up to it); a request
// frame opens at its top; going away and back scrolls to the answer again.
func TestResponseOpensAtTheAnswer(t *testing.T) {
	d := newDeck(t, 120, 24, agentRun)
	tl := d.tracks[0].tl
	resp := -1
	for i := range tl.Len() {
		if k, _ := tl.KindAt(i); k == timeline.KindLLMResponse && resp < 0 && i > 20 {
			resp = i
		}
	}
	gotoFrame := func(i int) {
		press(d, runes("g"))
		typeText(d, strconv.Itoa(i))
		press(d, keyEnter)
	}
	firstLine := func() string { return strings.Split(d.frame.View(), "\n")[1] }
	gotoFrame(resp)
	if !strings.Contains(firstLine(), "response · 200") || d.frame.vp.YOffset == 0 {
		t.Fatalf("frame %d opens at %q:\n%s", resp, firstLine(), d.frame.View())
	}
	gotoFrame(resp - 1)
	if d.frame.vp.YOffset != 0 {
		t.Fatalf("frame %d (not a response) opens scrolled to line %d", resp-1, d.frame.vp.YOffset)
	}
	gotoFrame(resp)
	if !strings.Contains(firstLine(), "response · 200") {
		t.Fatalf("back at frame %d: %q", resp, firstLine())
	}
}
