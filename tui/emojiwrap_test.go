package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
)

// TestFamilyEmojiWrapsAsDrawn: the frame view wrapped a line with a
// family emoji (👩‍👩‍👧‍👦, one grapheme two cells wide) as if it took two
// cells; drawn as its members side by side it took eight, and the
// screen's last pass cut the line: "family emo…", the "ji" lost.
func TestFamilyEmojiWrapsAsDrawn(t *testing.T) {
	const w = 80
	text := "family: word word word word word word word word word word \U0001F469\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family emoji then more words here tail"
	b := lines{w: w}
	b.add(lipgloss.NewStyle(), text)
	var drawn []string
	for _, l := range b.out {
		l = onScreen(l, w)
		if ansi.StringWidth(l) > w || strings.Contains(l, "…") {
			t.Errorf("a line cut on screen: %q", l)
		}
		drawn = append(drawn, ansi.Strip(l))
	}
	if all := strings.Join(drawn, " "); !strings.Contains(all, "family emoji then more words here tail") {
		t.Errorf("text lost:\n%s", strings.Join(drawn, "\n"))
	}
}
