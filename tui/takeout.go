package tui

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Taking a frame out of the turntable: o pages it, v opens a read-only
// copy in the editor, y copies it, w writes it to a file. What goes out is
// the frame as the frame view shows it (readable or raw), unwrapped and
// without styles: pretty JSON, real line breaks.

// maxCopy is the most y puts on the clipboard: terminals cap OSC 52.
const maxCopy = 100 << 10

// takeoutMsg says how a pager or editor ended.
type takeoutMsg struct {
	what string
	err  error
}

// frameText is the frame under the needle as plain text.
func (d *Deck) frameText() string { return d.frame.text() }

// text is the frame as the view lays it out, unwrapped and unstyled.
func (m *frameView) text() string {
	m.unwrapped = true
	out := m.content()
	m.unwrapped = false
	for i, l := range out {
		out[i] = strings.TrimRight(ansi.Strip(l), " ")
	}
	return strings.Join(out, "\n") + "\n"
}

func (d *Deck) getenv(k string) string {
	if d.o.Getenv != nil {
		return d.o.Getenv(k)
	}
	return os.Getenv(k)
}

// pageFrame pipes the frame to $PAGER's standard input, as git does
// (less -R when PAGER is unset); with neither, the frame view takes the
// keyboard to scroll it.
func (d *Deck) pageFrame() tea.Cmd {
	pager := d.getenv("PAGER")
	if pager == "" {
		if _, err := exec.LookPath("less"); err == nil {
			pager = "less -R"
		}
	}
	if pager == "" {
		d.pane = paneFrame
		d.status = "no $PAGER and no less: read it here (↑↓ pgup pgdn scroll, esc back)"
		return nil
	}
	cmd := exec.Command("sh", "-c", pager)
	cmd.Stdin = strings.NewReader(d.frameText())
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return takeoutMsg{what: "$PAGER (" + pager + ")", err: err} })
}

// editFrame opens a read-only copy of the frame in $VISUAL or $EDITOR,
// removed when the editor ends.
func (d *Deck) editFrame() tea.Cmd {
	editor := cmp.Or(d.getenv("VISUAL"), d.getenv("EDITOR"))
	if editor == "" {
		d.status = "no $VISUAL or $EDITOR set: o pages the frame, w writes it to a file"
		return nil
	}
	f, err := os.CreateTemp("", fmt.Sprintf("jukebox-frame-%d-*.txt", d.frame.seq))
	if err == nil {
		_, err = f.WriteString(d.frameText())
		err = errors.Join(err, f.Close(), os.Chmod(f.Name(), 0o444))
	}
	if err != nil {
		d.status = fmt.Sprintf("no copy for the editor: %v", err)
		return nil
	}
	name := f.Name()
	cmd := exec.Command("sh", "-c", editor+` "$1"`, "sh", name)
	return tea.ExecProcess(cmd, func(err error) tea.Msg {
		os.Remove(name)
		return takeoutMsg{what: "$EDITOR (" + editor + ")", err: err}
	})
}

// copyCurl puts the model call under the needle on the clipboard as a
// curl command (timeline.Curl).
func (d *Deck) copyCurl() {
	tv := d.tracks[d.focus]
	text, err := tv.tl.Curl(tv.cursor)
	if err != nil {
		d.status = "curl: " + err.Error()
		return
	}
	d.clip(text, fmt.Sprintf("the call at frame %d as a curl command", tv.cursor))
}

// copyFrame puts the frame on the clipboard through the terminal (OSC 52).
// Whether the terminal took it cannot be known; the status line says so.
func (d *Deck) copyFrame() {
	d.clip(d.frameText(), fmt.Sprintf("frame %d", d.frame.seq))
}

// clip sends text, what it is, to the clipboard (OSC 52).
func (d *Deck) clip(text, what string) {
	if len(text) > maxCopy {
		d.status = fmt.Sprintf("%s is %s: more than a terminal's clipboard takes; w writes the frame to a file", what, counted(int64(len(text)), "byte", "bytes"))
		return
	}
	out := d.o.Clipboard
	if out == nil {
		out = os.Stdout
	}
	if _, err := fmt.Fprintf(out, "\x1b]52;c;%s\x07", base64.StdEncoding.EncodeToString([]byte(text))); err != nil {
		d.status = fmt.Sprintf("copy: %v", err)
		return
	}
	d.status = fmt.Sprintf("%s (%s) sent to the clipboard (OSC 52; a terminal that ignores it copies nothing: w writes the frame to a file)",
		what, counted(int64(len(text)), "byte", "bytes"))
}

// writeName is the file w offers: the last one written, else frame-N.txt.
func (d *Deck) writeName() string {
	if d.lastWrite != "" {
		return d.lastWrite
	}
	return fmt.Sprintf("frame-%d.txt", d.frame.seq)
}

// writeFrame writes the frame to path; an existing file is replaced only
// after a yes.
func (d *Deck) writeFrame(path string, overwrite bool) {
	if path == "" {
		return
	}
	d.lastWrite = path
	path = expandHome(path)
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if overwrite {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if errors.Is(err, fs.ErrExist) {
		d.prompt.about = path
		d.openPrompt(promptOverwrite)
		return
	}
	if err == nil {
		_, err = f.WriteString(d.frameText())
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		d.status = fmt.Sprintf("cannot write %s: %v", termtext.Quote(path), err)
		return
	}
	d.status = fmt.Sprintf("frame %d written to %s", d.frame.seq, termtext.Quote(path))
}

// expandHome reads a leading ~ or ~/ as the home folder, as a shell
// would: the prompt is not a shell, and "~/frame.txt" was written to a
// folder named ~.
func expandHome(path string) string {
	home, err := os.UserHomeDir()
	if err != nil || path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	return filepath.Join(home, path[1:])
}
