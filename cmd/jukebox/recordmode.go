package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// recordModes are --record-mode's values, as vcrpy names them.
var recordModes = []string{"once", "new", "all", "none"}

// recordModeFlag is record's --record-mode.
type recordModeFlag struct {
	RecordMode string `name:"record-mode" placeholder:"MODE" help:"With -o FILE, what to do when FILE is there, as vcrpy's record modes: once (replay it; record only when it is missing), new (replay what it holds, record what is new from the live upstream into a new tape that supersedes it; the old one is kept beside it, listed), all (record again over it), none (replay only; an error when it is missing). Default: record, and refuse to overwrite FILE."`
}

// validate checks the mode and that it has a tape to work on.
func (f recordModeFlag) validate(output string) error {
	if f.RecordMode == "" {
		return nil
	}
	if !slices.Contains(recordModes, f.RecordMode) {
		return fmt.Errorf("--record-mode %q: one of %s", f.RecordMode, strings.Join(recordModes, ", "))
	}
	if output == "" {
		return fmt.Errorf("--record-mode %s needs -o FILE: the tape it replays, records or supersedes", f.RecordMode)
	}
	return nil
}

// byRecordMode runs record under --record-mode when the mode says to do
// something else than record to -o as it is: done is false when record
// goes on as always.
func (c *RecordCmd) byRecordMode(ctx context.Context, env *Env) (done bool, err error) {
	_, statErr := os.Stat(c.Output)
	there := statErr == nil
	switch {
	case c.RecordMode == "" && there:
		// Before anything starts: the agent does not run for a tape
		// that cannot be written.
		return true, withCode(ExitUsage, fmt.Errorf("%s is there, and record does not overwrite a tape: remove it, name another with -o, "+
			"or give --record-mode (once replays it, all records it again, new records what is new; the old tape is kept)", c.Output))
	case c.RecordMode == "" || !there && (c.RecordMode == "once" || c.RecordMode == "new" || c.RecordMode == "all"):
		return false, nil
	case !there: // none
		return true, withCode(ExitUsage, fmt.Errorf("--record-mode none: %s is not there, and none records nothing", c.Output))
	case c.RecordMode == "once" || c.RecordMode == "none":
		fmt.Fprintf(env.Stderr, "jukebox: %s is there: replaying it (--record-mode %s)\n", c.Output, c.RecordMode)
		return true, c.replay(ctx, env, "stop", "")
	case c.RecordMode == "all":
		return true, c.supersede(ctx, env, func(tmp string) error {
			rc := *c
			rc.Output, rc.RecordMode = tmp, ""
			rc.recordMode = "all"
			return rc.Run(ctx, env)
		})
	}
	return true, c.supersede(ctx, env, func(tmp string) error { return c.replay(ctx, env, "live", tmp) })
}

// replay replays -o as jukebox replay would, with record's shared flags
// (on divergence: stop, or live, recording the run to out).
func (c *RecordCmd) replay(ctx context.Context, env *Env, onDivergence, out string) error {
	rc := ReplayCmd{Tape: c.Output, Cmd: c.Cmd, Speed: "instant", OnDivergence: onDivergence, Output: out,
		Seed: c.Seed, QuietSDKs: true, JSON: c.JSON, recordMode: c.RecordMode,
		outputFlags: c.outputFlags, matchFlags: c.matchFlags, redactFlags: c.redactFlags,
		captureFlags: c.captureFlags, boothFlags: c.boothFlags, storeFlags: c.storeFlags}
	if onDivergence == "live" {
		rc.Upstream = c.Upstream
	}
	if err := rc.Validate(); err != nil {
		return withCode(ExitUsage, err)
	}
	return rc.Run(ctx, env)
}

// supersede has run write a new tape beside -o, then puts it in -o's
// place, the old tape kept beside it under a name that says so; when the
// new tape does not read whole, -o stays as it was.
func (c *RecordCmd) supersede(ctx context.Context, env *Env, run func(tmp string) error) error {
	stamp := time.Now().Format("20060102-150405.000")
	base := strings.TrimSuffix(c.Output, ".jbx")
	tmp := base + ".new-" + stamp + ".jbx"
	runErr := run(tmp)
	t, err := tapefmt.Open(tmp)
	if err != nil {
		os.Remove(tmp)
		return errors.Join(runErr, fmt.Errorf("--record-mode %s: the new tape did not read back (%v); %s is as it was", c.RecordMode, err, c.Output))
	}
	t.Close()
	old := base + ".superseded-" + stamp + ".jbx"
	if err := os.Rename(c.Output, old); err != nil {
		return errors.Join(runErr, err)
	}
	if err := os.Rename(tmp, c.Output); err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(env.Stderr, "jukebox: %s superseded (--record-mode %s): the new recording is %s, the old one %s\n",
		c.Output, c.RecordMode, c.Output, filepath.Base(old))
	return runErr
}
