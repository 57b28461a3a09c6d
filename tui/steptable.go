package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// stepTable is a run's steps and models as a table: calls, tokens, cost
// and time of each, sorted by the column chosen.
type stepTable struct {
	st      *Styles
	keys    stepTableKeys
	w, h    int
	tv      *timelineView
	steps   []tableRow
	models  []tableRow
	err     error
	loading bool
	col     int  // the column sorted by
	desc    bool // largest first
	sel     int  // the step row selected
	top     int
}

// tableRow is one step's or one model's figures.
type tableRow struct {
	key      string // the step's number, or the model
	step     int    // the step, from 0; -1 for a model
	calls    int
	in, out  int64
	cost     float64
	unpriced int
	time     time.Duration // a step: first frame to last; a model: its calls' time, summed
}

// tableCols are the columns, in order.
var tableCols = []string{"step", "calls", "tokens in", "tokens out", "cost", "time"}

// stepTableMsg brings the table's figures.
type stepTableMsg struct {
	tv            *timelineView
	steps, models []tableRow
	err           error
}

func newStepTable(st *Styles) *stepTable { return &stepTable{st: st, keys: newStepTableKeys()} }

// SetSize sets the pane's size, title included.
func (m *stepTable) SetSize(w, h int) { m.w, m.h = w, h }

// load reads the figures of tv's tape in a command: every call is read.
func (m *stepTable) load(tv *timelineView) tea.Cmd {
	m.tv, m.loading, m.err, m.steps, m.models, m.sel, m.top = tv, true, nil, nil, nil, 0, 0
	tl := tv.tl
	release := tl.Hold() // read in the background: see Timeline.Hold
	return func() tea.Msg {
		defer release()
		msg := stepTableMsg{tv: tv}
		byStep, err := tl.Bill(timeline.ByStep)
		if err != nil {
			msg.err = err
			return msg
		}
		byModel, err := tl.Bill(timeline.ByModel)
		if err != nil {
			msg.err = err
			return msg
		}
		calls := map[int]timeline.BillRow{}
		for _, r := range byStep.Rows {
			n, _ := strconv.Atoi(r.Key)
			calls[n-1] = r // the bill numbers steps from 1
		}
		for s := range tl.StepCount() {
			first, last := tl.StepStart(s), min(tl.StepStart(s+1), tl.Len())-1
			_, t0 := tl.KindAt(first)
			_, t1 := tl.KindAt(max(last, first))
			r := calls[s]
			msg.steps = append(msg.steps, tableRow{key: strconv.Itoa(s + 1), step: s, calls: r.Calls, in: r.Usage.Input, out: r.Usage.Output,
				cost: r.Cost, unpriced: r.Unpriced, time: t1 - t0})
		}
		for _, r := range byModel.Rows {
			msg.models = append(msg.models, tableRow{key: r.Key, step: -1, calls: r.Calls, in: r.Usage.Input, out: r.Usage.Output,
				cost: r.Cost, unpriced: r.Unpriced, time: time.Duration(r.Seconds * float64(time.Second))})
		}
		return msg
	}
}

// loaded takes the figures.
func (m *stepTable) loaded(msg stepTableMsg) {
	if msg.tv != m.tv {
		return
	}
	m.loading, m.err, m.steps, m.models = false, msg.err, msg.steps, msg.models
	m.sort()
}

// sort orders both tables by the column chosen (a model has no step: the
// step column sorts models by name).
func (m *stepTable) sort() {
	by := func(a, b tableRow) int {
		var c int
		switch m.col {
		case 0:
			c = cmp.Or(cmp.Compare(a.step, b.step), cmp.Compare(a.key, b.key))
		case 1:
			c = cmp.Compare(a.calls, b.calls)
		case 2:
			c = cmp.Compare(a.in, b.in)
		case 3:
			c = cmp.Compare(a.out, b.out)
		case 4:
			c = cmp.Compare(a.cost, b.cost)
		case 5:
			c = cmp.Compare(a.time, b.time)
		}
		if m.desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.step, b.step), cmp.Compare(a.key, b.key))
	}
	slices.SortStableFunc(m.steps, by)
	slices.SortStableFunc(m.models, by)
}

// ShortHelp is the step table's part of the help line.
func (m *stepTable) ShortHelp() []key.Binding {
	k := m.keys
	return []key.Binding{k.Up, k.Down, k.Sort, k.Reverse, k.Jump, k.Close}
}

// FullHelp is every step table key.
func (m *stepTable) FullHelp() [][]key.Binding { return [][]key.Binding{m.ShortHelp()} }

// update moves the selection and the sort; enter puts the needle on the
// step selected (done), esc closes (dismissed).
func (m *stepTable) update(km tea.KeyMsg) verdict {
	k := m.keys
	switch {
	case key.Matches(km, k.Close):
		return dismissed
	case key.Matches(km, k.Sort):
		m.col = (m.col + 1) % len(tableCols)
		m.desc = m.col != 0 // the biggest first, but steps in order
		m.sort()
	case key.Matches(km, k.Reverse):
		m.desc = !m.desc
		m.sort()
	case len(m.steps) == 0:
	case key.Matches(km, k.Up):
		m.sel = max(m.sel-1, 0)
	case key.Matches(km, k.Down):
		m.sel = min(m.sel+1, len(m.steps)-1)
	case key.Matches(km, k.Jump):
		m.tv.jump(m.tv.tl.StepStart(m.steps[m.sel].step))
		return done
	}
	return stay
}

// View draws the steps, then the models, each a table.
func (m *stepTable) View() string {
	order := "↑"
	if m.desc {
		order = "↓"
	}
	title := fmt.Sprintf("steps · sorted by %s %s · s sorts by the next column, r reverses, enter goes to the step, esc closes", tableCols[m.col], order)
	lines := []string{m.st.TitleFocused.Render(fit(title, m.w))}
	switch {
	case m.loading:
		lines = append(lines, fit(" reading every call…", m.w))
	case m.err != nil:
		lines = append(lines, m.st.Error.Render(fit(" "+termtext.Sanitize(m.err.Error()), m.w)))
	default:
		modelRows := min(len(m.models)+2, max(m.h/3, 3))
		rows := max(m.h-1-1-modelRows, 1) // title, the steps' header, the models
		lines = append(lines, m.st.Muted.Render(fit(tableLine(m.w, "step", "calls", "tok in", "tok out", "cost", "time"), m.w)))
		if m.sel < m.top {
			m.top = m.sel
		}
		if m.sel >= m.top+rows {
			m.top = m.sel - rows + 1
		}
		for j := m.top; j < len(m.steps) && j < m.top+rows; j++ {
			line := fit(m.steps[j].line(m.w), m.w)
			if j == m.sel {
				line = m.st.Selected.Render(line)
			}
			lines = append(lines, line)
		}
		for len(lines) < 2+rows {
			lines = append(lines, "")
		}
		lines = append(lines, m.st.Muted.Render(fit(tableLine(m.w, "model", "calls", "tok in", "tok out", "cost", "time"), m.w)))
		for j := 0; j < len(m.models) && j < modelRows-1; j++ {
			lines = append(lines, fit(m.models[j].line(m.w), m.w))
		}
	}
	return box(lines, m.w, m.h)
}

// line is the row's cells, for a width of w.
func (r tableRow) line(w int) string {
	cost := timeline.USD(r.cost)
	if r.unpriced > 0 {
		cost += "+?"
	}
	return tableLine(w, termtext.Sanitize(r.key), strconv.Itoa(r.calls), count(r.in), count(r.out), cost, timeline.Clock(r.time))
}

// tableLine lays the cells out in columns for a width of w, the first (a
// step or a model) taking what the others leave, up to 24 columns.
func tableLine(w int, cells ...string) string {
	first := min(max(w-2-12*(len(cells)-1), 6), 24)
	var b strings.Builder
	fmt.Fprintf(&b, " %-*s", first, fit(cells[0], first))
	for _, c := range cells[1:] {
		fmt.Fprintf(&b, " %11s", c)
	}
	return b.String()
}

// stepTableKeys work in the step table.
type stepTableKeys struct{ Up, Down, Sort, Reverse, Jump, Close key.Binding }

func newStepTableKeys() stepTableKeys {
	return stepTableKeys{
		Up:      key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:    key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Sort:    key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by the next column")),
		Reverse: key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reverse")),
		Jump:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "go to the step")),
		Close:   key.NewBinding(key.WithKeys("esc", "$"), key.WithHelp("esc", "close")),
	}
}
