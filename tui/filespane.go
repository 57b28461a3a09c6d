package tui

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/viewport"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/diffview"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// filesPane shows the booth's workspace at the needle: which files the
// agent had changed by that frame, then each one's content there as a
// diff from the run's start (timeline.WorkspaceAt).
type filesPane struct {
	st      *Styles
	keys    filesKeys
	vp      viewport.Model
	w, h    int
	frame   int
	text    string // the listing and the diffs, sanitised
	changed int
	err     error
	loading bool
}

// filesReadyMsg brings the workspace at a frame, laid out as text.
type filesReadyMsg struct {
	frame, changed int
	text           string
	err            error
}

func newFilesPane(st *Styles) *filesPane {
	return &filesPane{st: st, keys: newFilesKeys(), vp: viewport.New(0, 0)}
}

// SetSize sets the pane's size, title included.
func (m *filesPane) SetSize(w, h int) {
	m.w, m.h = w, h
	m.vp.Width, m.vp.Height = w, max(h-1, 1)
	m.vp.SetContent(m.text)
}

// ShortHelp is the files pane's part of the help line.
func (m *filesPane) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Up, m.keys.Down, m.keys.PageUp, m.keys.PageDown, m.keys.NextFile, m.keys.Close}
}

// FullHelp is every files pane key.
func (m *filesPane) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.NextFile, k.PrevFile, k.Close}}
}

// update scrolls; n and N go to the next and previous file, g and G to
// the top and the end; esc or W closes the pane.
func (m *filesPane) update(km tea.KeyMsg) verdict {
	k := m.keys
	switch {
	case key.Matches(km, k.Close):
		return dismissed
	case key.Matches(km, k.Top):
		m.vp.GotoTop()
	case key.Matches(km, k.Bottom):
		m.vp.GotoBottom()
	case key.Matches(km, k.NextFile), key.Matches(km, k.PrevFile):
		lines := strings.Split(m.text, "\n")
		next := key.Matches(km, k.NextFile)
		at := m.vp.YOffset
		for i := at + 1; next && i < len(lines); i++ {
			if strings.HasPrefix(lines[i], "── ") {
				m.vp.SetYOffset(i)
				return stay
			}
		}
		for i := at - 1; !next && i >= 0; i-- {
			if strings.HasPrefix(lines[i], "── ") {
				m.vp.SetYOffset(i)
				return stay
			}
		}
	default:
		scroll(&m.vp, km, k.Up, k.Down, k.PageUp, k.PageDown)
	}
	return stay
}

// ready shows a finished workspace.
func (m *filesPane) ready(msg filesReadyMsg) {
	m.loading, m.err, m.frame, m.changed, m.text = false, msg.err, msg.frame, msg.changed, msg.text
	m.vp.SetContent(m.text)
	m.vp.GotoTop()
}

// View draws the title and the listing.
func (m *filesPane) View() string {
	title := "files"
	switch {
	case m.loading:
		title = "files · reading the workspace…"
	case m.err != nil:
		title = "files · " + m.err.Error()
	default:
		title = fmt.Sprintf("files at frame %d · %s changed by the agent · esc closes", m.frame, counted(int64(m.changed), "path", "paths"))
	}
	return m.st.TitleFocused.Render(fit(title, m.w)) + "\n" + box(strings.Split(m.vp.View(), "\n"), m.w, m.vp.Height)
}

// workspaceText lays out the workspace at frame i: the changed paths,
// one a line, then each file's diff from the run's start.
func workspaceText(tl *timeline.Timeline, i int) filesReadyMsg {
	ws, err := tl.WorkspaceAt(i)
	if err != nil {
		return filesReadyMsg{frame: i, err: err}
	}
	changed := ws.Changed()
	var b strings.Builder
	if !ws.Steps {
		b.WriteString("(this tape has no step records: the agent's changes show only from the change set on)\n")
	}
	if len(changed) == 0 {
		b.WriteString("the agent had changed nothing by this frame\n")
	}
	for _, f := range changed {
		at := "the run's end"
		if f.Frame >= 0 {
			at = fmt.Sprintf("frame %d", f.Frame)
		}
		fmt.Fprintf(&b, "  %-8s %s  (%s)\n", f.Op, termtext.Quote(f.Path), at)
	}
	for _, f := range changed {
		b.WriteString("\n" + capSection(fileSection(ws, f)))
	}
	return filesReadyMsg{frame: i, changed: len(changed), text: termtext.Sanitize(termtext.Uniform(timeline.ExpandTabs(b.String())))}
}

// maxSectionLines bounds one file's lines in the pane: a file of 40,000
// lines came whole, and the files after it were a thousand pages down.
const maxSectionLines = 200

// capSection cuts a file's section to maxSectionLines, saying so.
func capSection(s string) string {
	n := 0
	for i := range len(s) {
		if s[i] != '\n' {
			continue
		}
		if n++; n == maxSectionLines && i+1 < len(s) {
			rest := strings.Count(s[i+1:], "\n")
			return s[:i+1] + fmt.Sprintf("… %s more lines of this file: its file.change frame shows them (o pages it, w writes it)\n", count(int64(rest)))
		}
	}
	return s
}

// fileSection is one changed file at the frame: its diff from the start,
// or what it is when there is no text to compare.
func fileSection(ws *timeline.Workspace, f timeline.WorkspaceFile) string {
	head := fmt.Sprintf("── %s %s ──\n", f.Op, f.Path)
	switch {
	case f.Source == timeline.SourceMissing:
		return head + "not rebuilt: " + f.Why + "\n"
	case f.Type == "symlink":
		return head + "→ " + f.Target + "\n"
	case f.Type != "file":
		return head
	}
	now, err := ws.Content(f)
	if err != nil {
		return head + "unreadable: " + err.Error() + "\n"
	}
	before, err := ws.StartContent(f)
	if errors.Is(err, timeline.ErrStartUnknown) {
		// Nothing to compare with: the file as it stood, whole.
		if !utf8.Valid(now) {
			return head + fmt.Sprintf("(%d bytes of binary data; %s)\n", len(now), err)
		}
		text := string(now)
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		return head + "(" + err.Error() + "; at this frame:)\n" + text
	}
	if err != nil {
		return head + "the start is unreadable: " + err.Error() + "\n"
	}
	if !utf8.Valid(now) || !utf8.Valid(before) {
		return head + fmt.Sprintf("(%d bytes of binary data)\n", len(now))
	}
	d := diffview.TextDiff("start/"+f.Path, "frame/"+f.Path, string(before), string(now))
	if d == "" {
		return head + "(same content as at the start; mode or time changed)\n"
	}
	return head + d
}

// filesKeys scroll the files pane.
type filesKeys struct {
	Up, Down, PageUp, PageDown, Top, Bottom, NextFile, PrevFile, Close key.Binding
}

func newFilesKeys() filesKeys {
	return filesKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g/home", "top")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G/end", "end")),
		NextFile: key.NewBinding(key.WithKeys("n"), key.WithHelp("n/N", "next/previous file")),
		PrevFile: key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "previous file")),
		Close:    key.NewBinding(key.WithKeys("esc", "W"), key.WithHelp("esc", "close")),
	}
}
