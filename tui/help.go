package tui

import "github.com/charmbracelet/bubbles/key"

// ShortHelp is the help line: the focused pane's keys, then the deck's.
func (d *Deck) ShortHelp() []key.Binding {
	var kb []key.Binding
	switch d.pane {
	case panePrompt:
		return d.prompt.ShortHelp()
	case paneForm:
		return d.form.ShortHelp()
	case paneDiff:
		kb = d.diff.ShortHelp()
	case paneFrame:
		kb = d.frame.ShortHelp()
	default:
		kb = d.tracks[d.focus].ShortHelp()
	}
	k := d.keys
	// The help and quit keys come first, so a narrow terminal never cuts them off.
	return append(append([]key.Binding{d.fkeys.Cancel, k.Help, k.Quit}, kb...), k.Fork, k.Diff, k.Focus)
}

// FullHelp is every key of the focused pane and the deck's, in columns.
func (d *Deck) FullHelp() [][]key.Binding {
	var groups [][]key.Binding
	switch d.pane {
	case panePrompt:
		return d.prompt.FullHelp()
	case paneForm:
		return d.form.FullHelp()
	case paneDiff:
		groups = d.diff.FullHelp()
	case paneFrame:
		groups = d.frame.FullHelp()
	default:
		groups = d.tracks[d.focus].FullHelp()
	}
	k := d.keys
	return append(groups, []key.Binding{k.Fork, d.fkeys.Cancel, k.Diff, k.Raw, k.Focus, k.Help, k.Quit})
}
