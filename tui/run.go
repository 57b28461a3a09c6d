package tui

import (
	"fmt"
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows the turntable on out, reading keys and the mouse from in, until
// the user quits. A tape that does not open is shown with the reason, and
// its error is returned after the user quits.
func Run(paths []string, o Options, in io.Reader, out io.Writer) error {
	d := New(paths, o)
	defer d.Close()
	p := tea.NewProgram(d, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithInput(in), tea.WithOutput(out))
	d.SetSend(p.Send)
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("turntable: %w", err)
	}
	return d.Err()
}

// Err is why a tape did not open, or nil.
func (d *Deck) Err() error { return d.openErr }
