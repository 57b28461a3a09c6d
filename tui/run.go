package tui

import (
	"errors"
	"fmt"
	"io"

	tea "github.com/charmbracelet/bubbletea"
)

// Run shows the turntable on out, reading keys and the mouse from in, until
// the user quits. A tape that does not open is shown with the reason, and
// its error is returned after the user quits.
func Run(paths []string, o Options, in io.Reader, out io.Writer) error {
	if o.Clipboard == nil {
		o.Clipboard = out
	}
	d := New(paths, o)
	defer d.Close()
	opts := []tea.ProgramOption{tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithInput(in), tea.WithOutput(out)}
	if o.Context != nil {
		// The context is the signals' path (main's, signal-aware). Bubble
		// Tea's own handler must then be off: it would race the context for
		// the same SIGTERM and block sending to a loop that has ended.
		opts = append(opts, tea.WithContext(d.ctx), tea.WithoutSignalHandler())
	}
	p := tea.NewProgram(d, opts...)
	d.SetSend(p.Send)
	if _, err := p.Run(); err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && d.ctx.Err() != nil {
			return nil // asked to stop (a signal), as q would: the terminal is restored, forks stopped
		}
		return fmt.Errorf("turntable: %w", err)
	}
	return d.Err()
}
