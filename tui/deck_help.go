package tui

import (
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// active is the pane that has the keyboard.
func (d *Deck) active() Component {
	switch d.pane {
	case panePrompt:
		return d.prompt
	case paneForm:
		return d.form
	case paneDiff:
		return d.diff
	case paneForks:
		return d.forks
	case paneFiles:
		return d.files
	case paneMarkers:
		return d.marks
	case paneTable:
		return d.table
	case paneFrame:
		return d.frame
	}
	return d.tracks[d.focus]
}

// modal reports whether the active pane takes every key (a prompt, the
// form): the deck's own keys do not work there.
func (d *Deck) modal() bool { return d.pane == panePrompt || d.pane == paneForm }

// ShortHelp is the help line: the active pane's keys, then the deck's.
func (d *Deck) ShortHelp() []key.Binding {
	kb := d.active().ShortHelp()
	if d.modal() {
		return kb
	}
	k := d.keys
	// The help and quit keys come first, so a narrow terminal never cuts them off.
	return append(append([]key.Binding{d.fkeys.Cancel, k.Help, k.Quit}, kb...), k.Fork, k.Diff, k.Focus, k.Forks)
}

// FullHelp is every key of the active pane and the deck's, in columns.
func (d *Deck) FullHelp() [][]key.Binding {
	groups := d.active().FullHelp()
	if d.modal() {
		return groups
	}
	k := d.keys
	return append(groups, []key.Binding{k.Fork, d.fkeys.Cancel, k.Diff, k.Forks, k.Files, k.Check, k.Raw, k.Zoom, k.Focus, k.Help, k.Quit})
}

// helpView is the help overlay's text: every key of FullHelp, those that
// do nothing at this moment listed too, marked "(not now)", so that each
// is learnt; scrolled by helpTop lines to fit h.
func (d *Deck) helpView(h int) []string {
	groups := d.FullHelp()
	shown := make([][]key.Binding, len(groups))
	for i, g := range groups {
		for _, b := range g {
			hb := b.Help()
			if hb.Key == "" {
				continue
			}
			if !b.Enabled() {
				b = key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(hb.Key, hb.Desc+" (not now)"))
			}
			shown[i] = append(shown[i], b)
		}
	}
	lines := strings.Split(d.help.FullHelpView(shown), "\n")
	if wide(lines, d.w) {
		// Too narrow for the columns side by side: one under the other,
		// which scrolls, rather than columns cut off at the right.
		free := d.help
		free.Width = 0
		lines = lines[:0]
		for _, g := range shown {
			if len(g) > 0 {
				lines = append(append(lines, strings.Split(free.FullHelpView([][]key.Binding{g}), "\n")...), "")
			}
		}
	}
	d.helpTop = max(0, min(d.helpTop, len(lines)-h))
	return lines[d.helpTop:]
}

// helpKey handles a key while the help overlay is open: ? or esc closes
// it, the arrows and page keys scroll it, q quits; nothing else acts
// underneath it.
func (d *Deck) helpKey(msg tea.KeyMsg) tea.Cmd {
	switch {
	case key.Matches(msg, d.keys.Quit):
		return tea.Quit
	case key.Matches(msg, d.keys.Help), msg.Type == tea.KeyEsc:
		d.help.ShowAll, d.helpTop = false, 0
	case msg.Type == tea.KeyDown || msg.String() == "j":
		d.helpTop++
	case msg.Type == tea.KeyUp || msg.String() == "k":
		d.helpTop = max(d.helpTop-1, 0)
	case msg.Type == tea.KeyPgDown || msg.Type == tea.KeySpace:
		d.helpTop += max(d.h-chromeRows-1, 1)
	case msg.Type == tea.KeyPgUp:
		d.helpTop = max(d.helpTop-max(d.h-chromeRows-1, 1), 0)
	}
	return nil
}

// wide reports whether the help's columns do not fit w (the help cuts
// them with … then).
func wide(lines []string, w int) bool {
	for _, l := range lines {
		if strings.Contains(l, "…") || visibleWidth(l) > w {
			return true
		}
	}
	return false
}
