package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// TestTinyScreensWithAPromptOpen: shrunk to 10 columns with a prompt open
// (/, g, :, M) or 5 with the fork form, the turntable panicked ("slice
// bounds out of range [15:10]" in the text field's view) and exited,
// taking a running fork with it. Every size down to 1x1 draws.
func TestTinyScreensWithAPromptOpen(t *testing.T) {
	for _, open := range []string{"/", "g", ":", "M", "f"} {
		d := newDeck(t, 120, 40, agentRun)
		press(d, runes("n"), runes("n"), runes("n"), runes(open), runes("a long text typed into the field"))
		for _, w := range []int{40, 12, 10, 6, 5, 3, 2, 1, 0} {
			for _, h := range []int{10, 3, 1} {
				d.Update(tea.WindowSizeMsg{Width: w, Height: h})
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%q open, %dx%d: panic: %v", open, w, h, r)
						}
					}()
					_ = d.View()
				}()
			}
		}
	}
}
