package main

import (
	"fmt"

	"github.com/jukebox-os/jukebox/timeline"
)

// BisectCmd finds the step where a run went wrong. For now it compares
// two runs (--good A --bad B) by their decisions; the search over forks
// of one tape (TAPE --check CMD, issue 34) is not wired yet.
type BisectCmd struct {
	Good string `type:"tape" placeholder:"TAPE" help:"A run that went right."`
	Bad  string `type:"tape" placeholder:"TAPE" help:"A run that went wrong: bisect names the first step where its decisions (tool chosen, arguments, final answer) differ from --good's."`
	JSON bool   `help:"Print the first difference as JSON."`
}

// Validate checks that both runs are named.
func (c *BisectCmd) Validate() error {
	switch {
	case c.Good == "" && c.Bad == "":
		return fmt.Errorf("bisect needs --good TAPE and --bad TAPE (two runs to compare)")
	case c.Bad == "":
		return fmt.Errorf("--good needs --bad TAPE: the run that went wrong")
	case c.Good == "":
		return fmt.Errorf("--bad needs --good TAPE: a run that went right")
	}
	return nil
}

// bisectTwo is bisect --good --bad's answer.
type bisectTwo struct {
	Good       string            `json:"good"`
	Bad        string            `json:"bad"`
	GoodSteps  int               `json:"good_steps"`
	BadSteps   int               `json:"bad_steps"`
	Difference *bisectDifference `json:"difference"` // null: they decided alike
}

// Run reads both runs' decisions and reports the first that differs.
func (c *BisectCmd) Run(env *Env) error {
	read := func(path string) ([]bisectDecision, error) {
		t, err := env.openTape(path)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		ds, err := tapeDecisions(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return ds, nil
	}
	good, err := read(c.Good)
	if err != nil {
		return err
	}
	bad, err := read(c.Bad)
	if err != nil {
		return err
	}
	out := bisectTwo{Good: c.Good, Bad: c.Bad, GoodSteps: len(good), BadSteps: len(bad), Difference: firstDifference(good, bad)}
	if c.JSON {
		return writeJSON(env.Stdout, out)
	}
	d := out.Difference
	if d == nil {
		fmt.Fprintf(env.Stdout, "the two runs decided alike at all %d steps\n", len(good))
		return nil
	}
	fmt.Fprintf(env.Stdout, "first difference at step %d (model call %d): %s\n", d.Step+1, d.Step, d.What)
	side := func(name string, x *bisectDecision) {
		if x == nil {
			fmt.Fprintf(env.Stdout, "  %-4s (no such step)\n", name)
			return
		}
		what := decisionLine(x)
		fmt.Fprintf(env.Stdout, "  %-4s frame %d: %s\n", name, x.Frame, what)
	}
	side("good", d.Good)
	side("bad", d.Bad)
	return nil
}

// decisionLine is a decision in one line: its tool calls, else its text.
func decisionLine(d *bisectDecision) string {
	if len(d.Tools) == 0 {
		return fmt.Sprintf("answered %q", timeline.OneLine(d.Text, 100))
	}
	s := ""
	for i, t := range d.Tools {
		if i > 0 {
			s += "; "
		}
		s += t.Name + " " + timeline.OneLine(t.Args, 100)
	}
	return s
}
