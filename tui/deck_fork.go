package tui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/spinner"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/timeline"
)

// openForm opens the fork form for the call at or after the needle, and
// asks the upstream the call's live half goes to for its models.
func (d *Deck) openForm() tea.Cmd {
	tv := d.tracks[d.focus]
	at, ok := d.forkPoint(tv)
	if !ok {
		return nil
	}
	var call *timeline.CallDetail
	det, err := tv.tl.Detail(at)
	if err == nil {
		call = det.Call
	}
	d.form = newForkForm(d.st, at, call)
	d.form.unreadable(err)
	_, d.form.folderNote = forkDir(tv.tl)
	d.form.SetSize(d.w, max(d.h-chromeRows, 3))
	d.pane = paneForm
	d.play.playing = false
	if call == nil || call.Provider == "" {
		return nil
	}
	form, provider, env := d.form, call.Provider, os.Environ()
	form.live = engine.LiveUpstream(provider, d.o.Upstreams, env)
	if form.live == "" {
		return nil
	}
	var recorded map[string]string
	if rs := tv.tl.Start(); rs != nil {
		recorded = rs.Upstream
	}
	ctx, list, given := d.ctx, d.o.ListModels, d.o.Upstreams
	if list == nil {
		list = engine.ListModels
	}
	return func() tea.Msg {
		// Where the fork's live calls will go, as engine.Fork decides it:
		// the upstream the tape was recorded against, when none is given
		// and it answers.
		ups, took := engine.ForkUpstreams(given, env, recorded)
		live := engine.LiveUpstream(provider, ups, env)
		ctx, cancel := context.WithTimeout(ctx, modelListTimeout)
		defer cancel()
		ids, err := list(ctx, provider, live, env)
		return formModelsMsg{form: form, ids: ids, err: err, live: live, fromTape: slices.Contains(took, provider)}
	}
}

// modelListTimeout bounds the wait for an upstream's model list.
const modelListTimeout = 5 * time.Second

// formKey gives a key to the fork form and starts the fork it asks for.
func (d *Deck) formKey(msg tea.KeyMsg) tea.Cmd {
	switch d.form.update(msg) {
	case dismissed:
		d.pane = paneTracks
	case done:
		return d.startFork(d.form.over)
	}
	return nil
}

// startFork runs engine.Fork in a command; events come back as messages.
// It forks the focused timeline: the parent, or the fork beside it, which
// then becomes the parent on screen.
func (d *Deck) startFork(over engine.Overrides) tea.Cmd {
	parent := d.tracks[d.focus]
	r := &forkRun{st: d.st, spin: spinner.New(spinner.WithSpinner(spinner.MiniDot), spinner.WithStyle(d.st.Fork)),
		done: make(chan struct{}), at: d.form.at}
	fo := engine.ForkOptions{
		RunOptions: engine.RunOptions{Stdout: io.Discard, Stderr: io.Discard,
			// The tape the fork writes: NAME-2.jbx when NAME.jbx is there,
			// where the turntable opened (and diffed) NAME.jbx, an
			// earlier fork's. Told before any event, so before a reload.
			OnTape: func(path string) { d.send.Send(forkTapeMsg{r, path}) },
			OnEvent: func(ev engine.Event) {
				if ev.Kind != engine.EventChunk {
					d.send.Send(forkEventMsg{ev})
				} else if r.streamed(ev.Data) {
					d.send.Send(forkStreamMsg{})
				}
			}},
		Parent: parent.tl.Path(), Remote: d.o.Remote, Frame: uint64(d.form.at), Overrides: over, Upstreams: d.o.Upstreams,
	}
	fo.Dir, _ = forkDir(parent.tl)
	fo.Name = d.form.name // "": the parent's
	if d.o.PrepareFork != nil {
		if err := d.o.PrepareFork(&fo); err != nil {
			d.form.err = err.Error()
			return nil
		}
	}
	if d.form.start {
		dir, err := startWorkspace(parent.tl)
		if err != nil {
			d.form.err = err.Error()
			return nil
		}
		// The agent the fork runs must be in the start: a script beside
		// the workspace (python3 ../agent.py) is not, and the fork died
		// at once ("can't open file"), the form having said nothing.
		if rs := parent.tl.Start(); rs != nil {
			if p := outsideStart(rs.Argv); p != "" && !commandFound(rs.Argv, dir) {
				os.RemoveAll(dir)
				d.form.err = fmt.Sprintf("the recorded command's %s lies outside the workspace, so not in the run's start, which holds the workspace alone: "+
					"fork in the recorded folder, or run jukebox fork --workspace start with the command after --", p)
				return nil
			}
		}
		fo.Dir = dir
	}
	if name := d.form.name; name != "" && fo.Tape == "" && !timeline.IsRemote(fo.Parent) {
		fo.Tape = filepath.Join(filepath.Dir(fo.Parent), name+".jbx")
	}
	if fo.Tape == "" {
		fo.Tape = defaultForkTape(fo.Parent, d.o.Now())
	}
	run := d.o.Fork
	if run == nil {
		run = engine.Fork
	}
	ctx, cancel := context.WithCancel(d.ctx)
	r.cancelFn, r.tape = cancel, fo.Tape
	earlier := ""
	for _, t := range d.tracks {
		if t != parent {
			if t.label == "fork" {
				earlier = t.tl.Path()
			}
			t.tl.Close()
		}
	}
	d.tracks = []*timelineView{parent}
	raw, _ := json.Marshal(over)
	d.family = append(d.family, forkEntry{path: fo.Tape, parent: fo.Parent, at: r.at, what: overridesText(raw), state: "running", name: d.form.name})
	d.status = "forking to " + baseName(fo.Tape)
	if earlier != "" && earlier != fo.Parent { // the earlier fork's timeline goes; its tape stays
		d.status += fmt.Sprintf(" · the earlier fork stays in %s (b lists the forks)", baseName(earlier))
	}
	d.run, d.pane, d.focus = r, paneTracks, 0
	parent.forkAt, parent.label = r.at, "parent"
	parent.diverge = -1 // a divergence from the earlier fork, not this one
	d.layout()
	made := d.form.start // a folder of the temporary folder, startWorkspace's
	return tea.Batch(r.spin.Tick, func() tea.Msg {
		defer close(r.done)
		res, err := run(ctx, fo)
		if made && !res.LeftWorkspace() {
			os.RemoveAll(fo.Dir) // the start alone: the fork wrote nothing there
		}
		return forkDoneMsg{res, err}
	})
}

// defaultForkTape names the fork's tape after its parent, beside it.
func defaultForkTape(parent string, now time.Time) string {
	base := strings.TrimSuffix(parent, filepath.Ext(parent))
	return fmt.Sprintf("%s-fork-%s.jbx", base, now.Format("20060102-150405.000"))
}

// forkMsg follows the fork: counts its calls and cost, re-opens its tape.
func (d *Deck) forkMsg(msg tea.Msg) tea.Cmd {
	r := d.run
	if r == nil {
		return nil
	}
	switch msg := msg.(type) {
	case forkEventMsg:
		r.event(msg.ev)
		return d.reloadFork()
	case forkTapeMsg:
		if msg.run == r && msg.path != r.tape {
			if i := d.familyIndex(r.tape); i >= 0 {
				d.family[i].path = msg.path
			}
			r.tape = msg.path
			d.status = "forking to " + baseName(r.tape)
		}
	case forkDoneMsg:
		r.finished, r.res, r.err = true, msg.res, msg.err
		d.status = forkOutcome(r)
		if i := d.familyIndex(r.tape); i >= 0 {
			d.family[i].state = forkState(r)
		}
		r.dirty = true
		return d.reloadFork()
	case forkReloadMsg:
		r.reloading = false
		d.forkReloaded(msg)
		if r.dirty {
			return d.reloadFork()
		}
	}
	return nil
}

// reloadFork re-opens the fork's tape in a command, one reload at a time.
func (d *Deck) reloadFork() tea.Cmd {
	r := d.run
	if r.reloading || !r.dirty {
		return nil
	}
	r.reloading, r.dirty = true, false
	path := r.tape
	return func() tea.Msg {
		tl, err := timeline.Open(path)
		if err == nil {
			tl.IndexCosts(context.Background())
		}
		return forkReloadMsg{tl, err}
	}
}

func (d *Deck) forkReloaded(msg forkReloadMsg) {
	if msg.err != nil {
		return // the tape has no whole step yet; the next event tries again
	}
	var tv *timelineView
	if len(d.tracks) == 2 {
		tv = d.tracks[1]
		old := tv.tl
		tv.setTimeline(msg.tl)
		old.Close()
		if tv.follow {
			tv.SetCursor(msg.tl.Len() - 1)
		}
	} else {
		tv = newTimelineView(msg.tl, d.st, "fork")
		d.o.Keys.apply(&tv.keys)
		d.tracks = append(d.tracks, tv)
		d.layout()
		tv.SetCursor(msg.tl.Len() - 1)
	}
	tv.live = d.run.running()
	tv.scroll()
}

// forkDir is the folder a fork of tl runs its agent in: the recorded one
// while it exists, else the tape's own (the turntable's folder would be
// a stranger's); note says why when it is not the recorded one, or that
// the recorded command is not found there.
func forkDir(tl *timeline.Timeline) (dir, note string) {
	rs := tl.Start()
	if rs == nil {
		return "", ""
	}
	dir = rs.Cwd
	if st, err := os.Stat(rs.Cwd); rs.Cwd == "" || err != nil || !st.IsDir() {
		if timeline.IsRemote(tl.Path()) {
			dir = ""
		} else {
			dir = filepath.Dir(tl.Path()) // as the tape was named: relative to here
		}
		note = fmt.Sprintf("the recorded folder %s is not here: the agent runs in %s", rs.Cwd, cmp.Or(dir, "this folder"))
	}
	if len(rs.Argv) > 0 && !commandFound(rs.Argv, dir) {
		note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("the recorded command %s is not found there", rs.Argv[0])
	}
	return dir, note
}

// outsideStart is the path of argv's program or script (python
// ../agent.py) that leads out of the folder it runs in, "" for none: a
// run's start is rebuilt in a folder of its own, beside nothing.
func outsideStart(argv []string) string {
	for i, a := range argv[:min(len(argv), 2)] {
		if i == 1 && (strings.HasPrefix(a, "-") || !strings.Contains(filepath.Base(a), ".")) {
			break // a flag, or no script
		}
		if c := filepath.Clean(a); !filepath.IsAbs(a) && (c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator))) {
			return a
		}
	}
	return ""
}

// commandFound says whether argv can start in dir: its program on PATH
// or at its path, and a script it names (python agent.py) beside it.
func commandFound(argv []string, dir string) bool {
	at := func(p string) bool {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		_, err := os.Stat(p)
		return err == nil
	}
	prog := argv[0]
	if strings.ContainsRune(prog, filepath.Separator) {
		if !at(prog) {
			return false
		}
	} else if _, err := exec.LookPath(prog); err != nil {
		return false
	}
	if len(argv) > 1 && !strings.HasPrefix(argv[1], "-") && strings.Contains(filepath.Base(argv[1]), ".") {
		return at(argv[1]) // a script: python agent.py, node index.js
	}
	return true
}

// startWorkspace writes the workspace as tl's run started into a new
// folder, for a fork to run in (jukebox fork --workspace start): from
// the tape's snapshot, or the recorded folder as it is now. What cannot
// be rebuilt refuses the fork.
func startWorkspace(tl *timeline.Timeline) (string, error) {
	ws, err := tl.WorkspaceAt(0)
	if err != nil {
		return "", fmt.Errorf("workspace start: %w", err)
	}
	if missing := ws.Missing(); len(missing) > 0 || ws.FolderGone {
		return "", fmt.Errorf("workspace start: the tape has no snapshot of the start and the recorded folder %s is gone or changed (record with --booth --snapshot); fork in the recorded folder instead", termtext.Quote(ws.Folder))
	}
	dir, err := os.MkdirTemp("", "jukebox-fork-start-")
	if err != nil {
		return "", err
	}
	if _, err := ws.WriteTo(dir); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("workspace start: %w", err)
	}
	return dir, nil
}
