package tui

import (
	"strings"
	"testing"
)

// TestHelpLineOnlyLiveKeys: the help line lists only keys that do
// something where the needle is: no ←/h at frame 0, no →/l at the last
// frame; pressed anyway, they say why they do nothing. In the diff, ↑/k
// and home are not listed at the top, ↓/j and end/G not at the bottom,
// and home/g and end/G move the view.
func TestHelpLineOnlyLiveKeys(t *testing.T) {
	d := newDeck(t, 200, 40, agentRun)
	help := func() string { return d.helpLine() }
	if strings.Contains(help(), "←/h") || !strings.Contains(help(), "→/l") {
		t.Fatalf("at frame 0: %s", help())
	}
	press(d, runes("h"))
	if cursor(d) != 0 || !strings.Contains(d.status, "at the first frame") {
		t.Fatalf("h at frame 0: frame %d, status %q", cursor(d), d.status)
	}
	press(d, keyEnd)
	if strings.Contains(help(), "→/l") || !strings.Contains(help(), "←/h") || strings.Contains(help(), "⇧→/L") {
		t.Fatalf("at the last frame: %s", help())
	}
	press(d, runes("l"))
	if !strings.Contains(d.status, "at the last frame") {
		t.Fatalf("l at the last frame: status %q", d.status)
	}

	d = newDeck(t, 120, 24, agentRun, tornTape)
	press(d, runes("d"))
	if d.pane != paneDiff {
		t.Fatal("d did not open the diff")
	}
	d.diff.vp.GotoTop()
	d.sync()
	if h := help(); strings.Contains(h, "↑/k") || !strings.Contains(h, "↓/j") {
		t.Fatalf("the diff at its top: %s", h)
	}
	press(d, runes("k"))
	if !strings.Contains(d.status, "the diff is at its top") {
		t.Fatalf("k at the top of the diff: %q", d.status)
	}
	press(d, runes("G"))
	if !d.diff.vp.AtBottom() || strings.Contains(help(), "↓/j") || !strings.Contains(help(), "↑/k") {
		t.Fatalf("G in the diff: at bottom %v, help %s", d.diff.vp.AtBottom(), help())
	}
	press(d, runes("g"))
	if !d.diff.vp.AtTop() {
		t.Fatal("g in the diff did not go to the top")
	}
}
