package tui

import (
	"fmt"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"
)

// TestGolden renders every pane at 40x12, 80x24, 160x48 and 200x60 with the ASCII colour
// profile and compares it with testdata/TestGolden/*.golden; run with
// -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	booth := writeBoothTape(t)
	panes := []struct {
		name  string
		paths []string
		keys  []tea.KeyMsg
	}{
		{"timeline", []string{agentRun}, nil},
		{"llm-call", []string{agentRun}, []tea.KeyMsg{runes("n"), runes("n")}},
		{"tool", []string{agentRun}, []tea.KeyMsg{runes("g"), runes("1"), runes("8"), keyEnter}},
		{"file", []string{agentRun}, []tea.KeyMsg{runes("g"), runes("1"), runes("7"), keyEnter}},
		{"raw", []string{agentRun}, []tea.KeyMsg{runes("n"), runes("r")}},
		{"step", []string{agentRun}, []tea.KeyMsg{runes("L"), runes("L"), keyLeft}},
		{"help", []string{agentRun}, []tea.KeyMsg{runes("?")}},
		{"search", []string{agentRun}, []tea.KeyMsg{runes("/"), runes("u"), runes("n"), runes("i")}},
		{"fork-form", []string{agentRun}, []tea.KeyMsg{runes("n"), runes("n"), runes("f")}},
		{"diff", []string{agentRun, tornTape}, []tea.KeyMsg{runes("d")}},
		{"two-tapes", []string{agentRun, tornTape}, []tea.KeyMsg{keyTab, runes("n")}},
		{"torn", []string{tornTape}, nil},
		{"not-a-tape", []string{notATape}, nil},
		{"files", []string{booth}, []tea.KeyMsg{runes("n"), runes("n"), runes("n"), runes("W")}},
		{"zoom", []string{agentRun}, []tea.KeyMsg{runes("n"), runes("+")}},
		{"command", []string{agentRun}, []tea.KeyMsg{runes(":"), runes("st")}},
		{"step-table", []string{agentRun}, []tea.KeyMsg{runes("$"), runes("s")}},
		{"markers", []string{agentRun}, []tea.KeyMsg{runes("m"), runes("n"), runes("M"), runes("x"), keyEnter, runes("\"")}},
	}
	for _, size := range [][2]int{{40, 12}, {80, 24}, {160, 48}, {200, 60}} {
		for _, p := range panes {
			t.Run(fmt.Sprintf("%s_%dx%d", p.name, size[0], size[1]), func(t *testing.T) {
				d := newDeck(t, size[0], size[1], p.paths...)
				press(d, p.keys...)
				golden.RequireEqual(t, d.View())
			})
		}
	}
}
