package tui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// Fields of the fork form, in tab order.
const (
	fieldModel = iota
	fieldSystem
	fieldTemperature
	fieldPatch
	fieldScope
	fieldName
	fieldWorkspace
)

// forkForm asks what to change when dropping the needle: the model, the
// system prompt (several lines), the temperature, any other field as a
// JSON merge patch, and which calls get the changes (engine.Scope). The
// fields start as the recorded call had them.
type forkForm struct {
	st     *Styles
	keys   formKeys
	w, h   int
	fields []field
	focus  int
	at     int    // the llm.request frame the fork happens at
	what   string // that call, in one line
	orig   struct{ model, system string }
	err    string
	name   string // the fork's name, once the form is done ("" for none)
	start  bool   // the fork runs in the run's start, rebuilt (fieldWorkspace)
	damage string // the recorded call does not read: why
	// folderNote warns that the recorded folder or command is missing,
	// and where the fork runs instead (forkDir).
	folderNote string
	over       engine.Overrides // what the form asked for, once it is done
	// live is where the fork's live calls go (engine.LiveUpstream); models
	// are what it lists at /v1/models, for ctrl+n and ctrl+p to pick from
	// (pick is the one picked, -1 none); modelsNote says how asking went.
	live         string
	liveFromTape bool // live is the upstream the tape was recorded against
	models       []string
	pick         int
	modelsNote   string
}

// formModelsMsg brings the upstream's model list to the form that asked.
type formModelsMsg struct {
	form *forkForm
	ids  []string
	err  error
	// live is where the fork's live calls go (engine.ForkUpstreams), and
	// fromTape says it is the upstream the tape was recorded against.
	live     string
	fromTape bool
}

func newForkForm(st *Styles, at int, c *timeline.CallDetail) *forkForm {
	f := &forkForm{st: st, keys: newFormKeys(), at: at, pick: -1, fields: []field{
		newField("model", "the recorded model", false),
		newField("system prompt", "(none recorded)", true),
		newField("temperature", "as recorded", false),
		newField("other overrides (JSON merge patch)", `e.g. {"max_tokens": 200}`, true),
		newField("apply to: all (this and later calls) or once (this call only)", "all", false),
		newField("name (optional): names the fork's run and its tape, NAME.jbx beside the parent; b lists it by this name", "a name such as try-gpt4o", false),
		newField("workspace: recorded (the folder as it is now) or start (the run's start, rebuilt from the tape's snapshot)", "recorded", false),
	}}
	f.fields[fieldScope].SetValue(string(engine.ScopeAll))
	if c != nil {
		f.what = fmt.Sprintf("%s %s · %s", c.Method, c.Path, c.Model)
		f.orig.model, f.orig.system = c.Model, c.System
		f.fields[fieldModel].SetValue(c.Model)
		f.fields[fieldSystem].SetValue(c.System)
		f.unreadable(c.RequestErr)
	}
	return f
}

// unreadable says, when err is set, that the recorded call does not read:
// its system prompt is unknown, not absent.
func (m *forkForm) unreadable(err error) {
	if err == nil {
		return
	}
	m.damage = timeline.OneLine(err.Error(), 0)
	m.fields[fieldSystem].Placeholder = "(unknown: the recorded request does not read)"
}

// SetSize sets the form's size.
func (m *forkForm) SetSize(w, h int) { m.w, m.h = w, h }

// update edits the focused field or moves between fields; esc dismisses
// the form and enter gives its overrides (done), unless a field is wrong,
// which the form then says.
func (m *forkForm) update(km tea.KeyMsg) verdict {
	f := &m.fields[m.focus]
	switch {
	case key.Matches(km, m.keys.Cancel):
		return dismissed
	case key.Matches(km, m.keys.Submit):
		over, err := m.Overrides()
		if err == nil {
			m.name, err = engine.ForkName(m.fields[fieldName].Value())
		}
		if err == nil {
			m.start, err = workspaceChoice(m.fields[fieldWorkspace].Value())
		}
		if err != nil {
			m.err = err.Error()
			return stay
		}
		m.over = over
		return done
	case key.Matches(km, m.keys.Next) && !(f.Multi && km.Type == tea.KeyDown && f.row < len(f.lines)-1):
		m.focus = (m.focus + 1) % len(m.fields)
	case key.Matches(km, m.keys.Prev) && !(f.Multi && km.Type == tea.KeyUp && f.row > 0):
		m.focus = (m.focus + len(m.fields) - 1) % len(m.fields)
	case key.Matches(km, m.keys.Newline):
		f.Newline()
	case m.focus == fieldModel && key.Matches(km, m.keys.PickNext, m.keys.PickPrev):
		m.pickModel(km)
	default:
		f.update(km)
	}
	m.err = ""
	return stay
}

// pickModel puts the next (ctrl+n) or previous (ctrl+p) model of the
// upstream's list in the model field.
func (m *forkForm) pickModel(km tea.KeyMsg) {
	n := len(m.models)
	if n == 0 {
		return
	}
	if m.pick < 0 {
		m.pick = slices.Index(m.models, strings.TrimSpace(m.fields[fieldModel].Value()))
	}
	switch {
	case key.Matches(km, m.keys.PickNext):
		m.pick = (m.pick + 1) % n
	case m.pick <= 0:
		m.pick = n - 1
	default:
		m.pick--
	}
	m.fields[fieldModel].SetValue(m.models[m.pick])
}

// modelsListed takes the upstream's answer to the model list request.
func (m *forkForm) modelsListed(msg formModelsMsg) {
	if msg.live != "" {
		m.live, m.liveFromTape = msg.live, msg.fromTape
	}
	switch {
	case msg.err != nil:
		m.modelsNote = "no model list from " + m.live + ": " + timeline.OneLine(msg.err.Error(), 0)
	case len(msg.ids) == 0:
		m.modelsNote = m.live + " lists no models"
	default:
		m.models, m.modelsNote = msg.ids, ""
	}
}

// modelsLine is the line under the model field: the models to pick from,
// the one in the field marked, or why there are none.
func (m *forkForm) modelsLine() string {
	if len(m.models) == 0 {
		if m.modelsNote == "" {
			return m.st.Muted.Render("asking " + m.live + " for its models…")
		}
		return m.st.Muted.Render(m.modelsNote)
	}
	cur := strings.TrimSpace(m.fields[fieldModel].Value())
	parts := make([]string, len(m.models))
	for i, id := range m.models {
		parts[i] = termtext.Sanitize(id)
		if id == cur {
			parts[i] = "[" + parts[i] + "]"
		}
	}
	return m.st.Muted.Render(fmt.Sprintf("ctrl+n/ctrl+p pick one of %d: %s", len(m.models), strings.Join(parts, " · ")))
}

// scopeLine says which calls the changes reach, as the scope field reads.
func (m *forkForm) scopeLine() string {
	if engine.Scope(strings.TrimSpace(m.fields[fieldScope].Value())) == engine.ScopeOnce {
		return " The changes apply to this call only (later calls go live as the agent sends them)."
	}
	return " The changes apply to this call and every later one to the same endpoint."
}

// ShortHelp is the form's keys.
func (m *forkForm) ShortHelp() []key.Binding {
	return []key.Binding{m.keys.Submit, m.keys.Next, m.keys.Newline, m.keys.Cancel}
}

// FullHelp is the form's keys.
func (m *forkForm) FullHelp() [][]key.Binding {
	k := m.keys
	return [][]key.Binding{{k.Submit, k.Next, k.Prev, k.Newline, k.PickNext, k.Cancel}}
}

// Overrides reads the form: only what was changed from the recording is
// overridden. An error names the field that is wrong.
func (m *forkForm) Overrides() (engine.Overrides, error) {
	var o engine.Overrides
	if v := strings.TrimSpace(m.fields[fieldModel].Value()); v != "" && v != m.orig.model {
		o.Model = v
	}
	if v := m.fields[fieldSystem].Value(); v != m.orig.system {
		o.SystemPrompt = &v
	}
	if v := strings.TrimSpace(m.fields[fieldTemperature].Value()); v != "" {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t < 0 || t > 2 {
			return o, fmt.Errorf("temperature %q is not a number from 0 to 2", v)
		}
		o.Temperature = &t
	}
	if v := strings.TrimSpace(m.fields[fieldPatch].Value()); v != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(v), &obj); err != nil {
			return o, fmt.Errorf("the merge patch is not a JSON object: %v", err)
		}
		o.Patch = json.RawMessage(v)
	}
	switch v := engine.Scope(strings.TrimSpace(m.fields[fieldScope].Value())); v {
	case "", engine.ScopeAll:
		o.Scope = engine.ScopeAll
	case engine.ScopeOnce:
		o.Scope = engine.ScopeOnce
	default:
		return o, fmt.Errorf("apply to %q: all or once", v)
	}
	return o, nil
}

// View draws the form.
func (m *forkForm) View() string {
	st := m.st
	lines := []string{
		st.Fork.Render(fmt.Sprintf(" ⑂ Drop the needle at frame %d", m.at)) + st.Muted.Render("  "+m.what),
	}
	if m.live == "" {
		lines = append(lines, st.Muted.Render(" Earlier calls are answered from the tape; this call and later ones go live."))
	} else {
		where := "   " + termtext.Sanitize(m.live)
		if m.liveFromTape {
			where += st.Muted.Render(" (the upstream the tape was recorded against)")
		}
		lines = append(lines, st.Muted.Render(" Earlier calls are answered from the tape; this call and later ones go live to"), where)
	}
	lines = append(lines, st.Muted.Render(m.scopeLine()), "")
	if m.damage != "" {
		lines = append(lines, " "+st.Error.Render("✖ "+m.damage), "")
	}
	if m.folderNote != "" {
		lines = append(lines, " "+st.Error.Render("⚠ "+termtext.Sanitize(m.folderNote)), "")
	}
	heights := []int{1, max(m.h-28, 2), 1, max(min(m.h-28, 4), 1), 1, 1, 1}
	if m.damage != "" {
		heights[fieldSystem] = max(heights[fieldSystem]-2, 2)
	}
	top, bottom := 0, 0 // the focused field's lines
	for i := range m.fields {
		f := &m.fields[i]
		label := st.Title
		if i == m.focus {
			label, top = st.TitleFocused, len(lines)
		}
		lines = append(lines, " "+label.Render(f.Label))
		for _, l := range f.view(*st, m.w-4, heights[i], i == m.focus) {
			lines = append(lines, "   "+l)
		}
		if i == fieldModel && m.live != "" {
			lines = append(lines, "   "+m.modelsLine())
		}
		if i == m.focus {
			bottom = len(lines) - 1
		}
		lines = append(lines, "")
	}
	// On a short terminal the form scrolls so that the focused field is
	// on screen, its label and all its lines; a wrong field's error has
	// the last line, whatever the scroll.
	h := m.h
	if m.err != "" {
		h = max(m.h-1, 1)
	}
	off := 0
	if bottom >= h {
		off = bottom - h + 1
	}
	off = min(off, top)
	view := box(lines[off:], m.w, h)
	if m.err != "" {
		view += "\n" + fit(" "+st.Error.Render(m.err), m.w)
	}
	return view
}

// formKeys drive the fork form.
type formKeys struct{ Next, Prev, Submit, Newline, Cancel, PickNext, PickPrev key.Binding }

func newFormKeys() formKeys {
	return formKeys{
		Next:     key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		Prev:     key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("⇧tab", "prev field")),
		Submit:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run fork")),
		Newline:  key.NewBinding(key.WithKeys("ctrl+j", "alt+enter"), key.WithHelp("ctrl+j", "new line")),
		Cancel:   key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
		PickNext: key.NewBinding(key.WithKeys("ctrl+n"), key.WithHelp("ctrl+n/p", "pick a model")),
		PickPrev: key.NewBinding(key.WithKeys("ctrl+p"), key.WithHelp("ctrl+p", "prev model")),
	}
}

// workspaceChoice reads the workspace field: true for start.
func workspaceChoice(v string) (bool, error) {
	switch strings.TrimSpace(v) {
	case "", "recorded":
		return false, nil
	case "start":
		return true, nil
	}
	return false, fmt.Errorf("workspace: recorded or start, not %q", strings.TrimSpace(v))
}
