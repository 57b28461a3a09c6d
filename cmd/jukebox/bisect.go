package main

import (
	"context"
	"fmt"

	"github.com/jukebox-os/jukebox/breaker"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// BisectCmd finds the step where a run went wrong: the point of no
// return of one run (TAPE --check CMD with a change, forking it at its
// model calls), or the first step where two runs decided differently
// (--good A --bad B).
type BisectCmd struct {
	Tape  string `arg:"" optional:"" type:"tape" help:"The run that went wrong, to fork with the change at its model calls (with --check)."`
	Check string `placeholder:"CMD" help:"With TAPE: a shell command run in each fork's folder after the fork: exit 0 when the fork went right. Its environment names the fork: JUKEBOX_BISECT_TAPE, _FRAME, _CALL, _RUN, _WORKSPACE, _OUTPUT (a file with the agent's stdout), _EXIT (the agent's exit code), _PARENT."`
	// The change each probe forks with, as jukebox fork takes it.
	Model            string    `help:"With --check: the model from the fork's call on."`
	SystemPromptFile string    `type:"existingfile" placeholder:"FILE" help:"With --check: replace the system prompt with this file's text (its final newline left out)."`
	Set              []string  `sep:"none" placeholder:"PATH=VALUE" help:"With --check: rewrite a field of the request at the fork call, as fork --set. Repeatable."`
	SetFile          string    `type:"existingfile" placeholder:"FILE" help:"With --check: fields to rewrite, as fork --set-file."`
	Temperature      *float64  `help:"With --check: set the temperature."`
	Patch            string    `placeholder:"JSON" help:"With --check: a JSON merge patch applied to the request, as fork --patch."`
	Once             bool      `help:"With --check: apply the change to the fork call only, as fork --once."`
	Upstream         upstreams `placeholder:"NAME=URL" help:"With --check: where the forks' live calls go, as in fork."`
	Runs             int       `default:"1" placeholder:"N" help:"With --check: fork each probe N times and take the majority (model answers vary); a tie is bad."`
	MaxCost          float64   `name:"max-cost" placeholder:"USD" help:"With --check: stop once the forks' live calls have cost this much, over the whole bisect (exit 7, naming what is known so far); each fork gets what is left as its own --max-cost."`
	UnknownModelRate *float64  `placeholder:"USD" help:"With --check and --max-cost: the price of a model that has no price, in dollars per million tokens, as fork takes it; without it such a model stops the bisect."`
	NoBooth          bool      `help:"With --check: fork outside the Shadow Booth (each fork runs in its own copy of the run's folder either way)."`
	Fresh            bool      `help:"With --check: fork every probe again, forgetting the verdicts remembered beside the tape (NAME.jbx.d/bisect.json) for this change and check: when the agent's code or what the check reads changed since."`
	KeepWorkspaces   bool      `help:"With --check: keep each fork's folder (named on stderr) instead of removing it after the check."`
	Good             string    `type:"tape" placeholder:"TAPE" help:"A run that went right (with --bad)."`
	Bad              string    `type:"tape" placeholder:"TAPE" help:"A run that went wrong: bisect names the first step where its decisions (tool chosen, arguments, final answer) differ from --good's."`
	JSON             bool      `help:"Print the answer as JSON."`
}

// Validate checks that one run with a check, or two runs, are named.
func (c *BisectCmd) Validate() error {
	if c.Tape != "" || c.Check != "" {
		switch {
		case c.Good != "" || c.Bad != "":
			return fmt.Errorf("bisect takes TAPE --check CMD, or --good TAPE --bad TAPE, not both")
		case c.Tape == "":
			return fmt.Errorf("--check needs TAPE: the run to fork")
		case c.Check == "":
			return fmt.Errorf("bisect TAPE needs --check CMD: a command that says whether a fork went right (exit 0)")
		case c.Runs < 1:
			return fmt.Errorf("--runs %d: %w", c.Runs, errBisectRuns)
		case c.MaxCost < 0 || c.MaxCost != c.MaxCost || c.MaxCost > 1e12:
			return fmt.Errorf("--max-cost %v: want a finite amount of dollars, above 0", c.MaxCost)
		case c.UnknownModelRate != nil && !breaker.Finite(*c.UnknownModelRate):
			return fmt.Errorf("--unknown-model-rate %v: a limit must be a finite number above 0", *c.UnknownModelRate)
		}
		_, err := c.changeArgs()
		return err
	}
	switch {
	case c.Good == "" && c.Bad == "":
		return fmt.Errorf("bisect needs TAPE --check CMD with a change (the point of no return of one run), or --good TAPE --bad TAPE (two runs to compare)")
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

// Run bisects one run with a check, or reads both runs' decisions and
// reports the first that differs.
func (c *BisectCmd) Run(ctx context.Context, env *Env) error {
	catchBrokenPipe() // its runs end, and their verdicts, whoever reads its output
	if c.Tape != "" {
		var err error
		if c.Tape, err = env.tape(ctx, c.Tape); err != nil {
			return err
		}
		return c.runCheck(ctx, env)
	}
	read := func(path string) ([]bisectDecision, error) {
		t, err := env.openTape(path)
		if err != nil {
			return nil, err
		}
		defer t.Close()
		// Its frames read whole first (CRCs, chain, index): the decisions
		// read the model calls alone, so a run.start that did not read, a
		// time that went back, passed, and two runs were "decided alike".
		if _, err := t.Verify(tapefmt.VerifyOptions{}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if rec := t.Recovered(); rec != nil {
			// A run cut short "ended" where the tape was cut: said so.
			fmt.Fprintf(env.Stderr, "warning: %s: %s; its decisions are those up to there\n", path, recoveryText(rec))
		}
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
	if d.Error != "" {
		return "the call failed: " + timeline.OneLine(d.Error, 200)
	}
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
