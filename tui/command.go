package tui

import (
	"fmt"
	"strconv"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/jukebox-os/jukebox/timeline"
)

// The command line (:) runs the turntable's commands that take an
// argument, by name: a name may be cut to any prefix only it has (":st
// 3" is :step 3), and a bare number is a frame.

// command is one of the command line's commands.
type command struct {
	name, args, what string
	run              func(d *Deck, arg string) tea.Cmd
}

// commands are the command line's commands, in the order help lists them.
var commands = []command{
	{"frame", "N", "put the needle on frame N (also :N)", func(d *Deck, arg string) tea.Cmd {
		d.lastGoto = arg
		d.gotoFrame(arg)
		return nil
	}},
	{"step", "N", "put the needle on the first frame of step N", func(d *Deck, arg string) tea.Cmd {
		tv := d.tracks[d.focus]
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 || n > tv.tl.StepCount() {
			d.status = fmt.Sprintf("no step %q: steps are 1 to %d", arg, tv.tl.StepCount())
			return nil
		}
		tv.jump(tv.tl.StepStart(n - 1))
		d.status = ""
		return nil
	}},
	{"search", "TEXT", "search, as / does", func(d *Deck, arg string) tea.Cmd {
		if arg == "" {
			d.status = ":search takes the text to find"
			return nil
		}
		d.lastQuery = arg
		return d.startSweep(arg)
	}},
	{"filter", "KIND", "only frames of a kind (" + strings.Join(classNames(), ", ") + ") or all", func(d *Deck, arg string) tea.Cmd {
		tv := d.tracks[d.focus]
		c, ok := classNamed(arg)
		if !ok {
			d.status = fmt.Sprintf("no kind %q: :filter takes %s or all", arg, strings.Join(classNames(), ", "))
			return nil
		}
		return tv.setFilter(c)
	}},
	{"note", "TEXT", "a marker with a note on this frame (no text: the note goes)", func(d *Deck, arg string) tea.Cmd {
		return d.tracks[d.focus].setNote(arg)
	}},
	{"write", "PATH", "write this frame to a file, as w does", func(d *Deck, arg string) tea.Cmd {
		if arg == "" {
			d.status = ":write takes the file to write"
			return nil
		}
		d.writeFrame(arg, false)
		return nil
	}},
	{"table", "", "the step table, as $ does", func(d *Deck, _ string) tea.Cmd { return d.openTable() }},
	{"marks", "", "the marker list, as \" does", func(d *Deck, _ string) tea.Cmd {
		d.openMarkers()
		return nil
	}},
	{"quit", "", "quit, as q does", func(*Deck, string) tea.Cmd { return tea.Quit }},
}

// runCommand runs a command line.
func (d *Deck) runCommand(line string) tea.Cmd {
	name, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	arg = strings.TrimSpace(arg)
	if name == "" {
		return nil
	}
	if _, err := strconv.Atoi(name); err == nil && arg == "" {
		return commands[0].run(d, name)
	}
	c, err := commandNamed(name)
	if err != nil {
		d.status = err.Error()
		return nil
	}
	return c.run(d, arg)
}

// commandNamed is the command name names (whole, or a prefix of it alone).
func commandNamed(name string) (command, error) {
	var found []command
	for _, c := range commands {
		if c.name == name {
			return c, nil
		}
		if strings.HasPrefix(c.name, name) {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return command{}, fmt.Errorf("no command %q: commands are %s (tab completes)", name, strings.Join(commandNames(), ", "))
	}
	var names []string
	for _, c := range found {
		names = append(names, c.name)
	}
	return command{}, fmt.Errorf(":%s is %s: type more of it", name, strings.Join(names, " or "))
}

func commandNames() []string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return names
}

// completeCommand completes a command line's command name, as far as the
// commands that start with it agree.
func completeCommand(line string) string {
	if strings.Contains(line, " ") {
		return line
	}
	var match []string
	for _, n := range commandNames() {
		if strings.HasPrefix(n, line) {
			match = append(match, n)
		}
	}
	if len(match) == 0 {
		return line
	}
	common := match[0]
	for _, n := range match[1:] {
		for !strings.HasPrefix(n, common) {
			common = common[:len(common)-1]
		}
	}
	if len(match) == 1 {
		return common + " "
	}
	return common
}

// classNames are the names :filter takes.
func classNames() []string { return timeline.ClassNames }

// classNamed is the class a name names; 0 (every kind) for "all".
func classNamed(name string) (timeline.Class, bool) {
	if name == "all" || name == "" {
		return 0, true
	}
	return timeline.ClassNamed(name)
}
