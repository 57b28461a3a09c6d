package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
)

// RulesCmd shows the matching rules a replay of a tape uses, where each
// comes from, and clears those kept beside it.
type RulesCmd struct {
	Tape  string `arg:"" help:"The tape (.jbx)." type:"existingfile"`
	Clear bool   `help:"Remove the rules kept beside the tape (NAME.jbx.d/match.json); the tape's own stay."`
	JSON  bool   `help:"Print {tape, recorded, ignore_output, beside, beside_file, defaults, cleared}."`
}

// rulesResult is rules --json.
type rulesResult struct {
	Tape     string          `json:"tape"`
	Recorded *reqmatch.Rules `json:"recorded"`
	// IgnoreOutput are record's --ignore-output patterns, in the tape.
	IgnoreOutput []string        `json:"ignore_output"`
	Beside       *reqmatch.Rules `json:"beside"`
	BesideFile   string          `json:"beside_file"`
	Defaults     []string        `json:"defaults"`
	Cleared      bool            `json:"cleared"`
	Unreadable   string          `json:"unreadable,omitempty"`
}

// Run prints the rules, clearing the sidecar's first when asked.
func (c *RulesCmd) Run(env *Env) error {
	start, err := parentStart(env.remote(), c.Tape, env.Stderr)
	if err != nil {
		return err
	}
	res := rulesResult{Tape: c.Tape, BesideFile: filepath.Join(sidecar.Dir(c.Tape), reqmatch.FileName),
		Defaults: reqmatch.DefaultIgnore}
	recorded := reqmatch.FromTape(start.Match)
	res.Recorded, res.IgnoreOutput = &recorded, append([]string{}, start.IgnoreOutput...)
	beside, err := reqmatch.Remembered(sidecar.Dir(c.Tape))
	if err != nil && !c.Clear {
		return withCode(ExitUsage, fmt.Errorf("%w (--clear removes the file)", err))
	}
	if err != nil {
		res.Unreadable = err.Error() // removed all the same: what --clear is for
	}
	res.Beside = &beside
	if c.Clear && (!beside.Empty() || err != nil) {
		if err := os.Remove(res.BesideFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		os.Remove(sidecar.Dir(c.Tape)) // the folder too, when nothing else is in it
		res.Cleared = true
	}
	if c.JSON {
		return writeJSON(env.Stdout, res)
	}
	printRules(env.Stdout, res)
	return nil
}

func printRules(w io.Writer, r rulesResult) {
	fmt.Fprintf(w, "%s\n", r.Tape)
	fmt.Fprintf(w, "  recorded with (in the tape; every replay and fork): %s\n", r.Recorded)
	if len(r.IgnoreOutput) > 0 {
		fmt.Fprintf(w, "  output compared ignoring (in the tape; every replay): %q\n", r.IgnoreOutput)
	}
	switch {
	case r.Cleared && r.Unreadable != "":
		fmt.Fprintf(w, "  beside it (%s): removed (it did not read: %s)\n", r.BesideFile, r.Unreadable)
	case r.Cleared:
		fmt.Fprintf(w, "  beside it (%s): removed (it held: %s)\n", r.BesideFile, r.Beside)
	case r.Beside.Empty():
		fmt.Fprintf(w, "  beside it (%s): none\n", r.BesideFile)
	default:
		fmt.Fprintf(w, "  beside it (%s; replay and fork, not replay --strict): %s\n", r.BesideFile, r.Beside)
	}
	fmt.Fprintf(w, "  defaults: ignore %s\n", strings.Join(r.Defaults, ", "))
}
