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

	"github.com/jukebox-os/jukebox/engine"
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
		_, err := c.replay(ctx, env, "stop", "")
		return true, err
	case c.RecordMode == "all":
		return true, c.supersede(ctx, env, func(tmp string) (*engine.Result, error) {
			rc := *c
			rc.Output, rc.RecordMode = tmp, ""
			rc.recordMode = "all"
			err := rc.Run(ctx, env)
			return rc.ran, err
		})
	}
	return true, c.supersede(ctx, env, func(tmp string) (*engine.Result, error) { return c.replay(ctx, env, "live", tmp) })
}

// replay replays -o as jukebox replay would, with record's shared flags
// (on divergence: stop, or live, recording the run to out).
func (c *RecordCmd) replay(ctx context.Context, env *Env, onDivergence, out string) (*engine.Result, error) {
	rc := ReplayCmd{Tape: c.Output, Cmd: c.Cmd, Speed: "instant", OnDivergence: onDivergence, Output: out,
		Seed: c.Seed, QuietSDKs: true, JSON: c.JSON, recordMode: c.RecordMode,
		outputFlags: c.outputFlags, matchFlags: c.matchFlags, redactFlags: c.redactFlags,
		captureFlags: c.captureFlags, boothFlags: c.boothFlags, storeFlags: c.storeFlags}
	if onDivergence == "live" {
		rc.Upstream = c.Upstream
	}
	if err := rc.Validate(); err != nil {
		return nil, withCode(ExitUsage, err)
	}
	err := rc.Run(ctx, env)
	return rc.ran, err
}

// supersede has run write a new tape beside -o, then puts it in -o's
// place, the old tape kept beside it under a name that says so. -o stays
// as it was when the new tape does not read whole; when nothing was new
// (--record-mode new, every call answered from -o: the new tape is
// removed); and when the new run failed where the recorded one had not
// (an upstream that is down, an agent that now crashes: the new tape is
// kept beside it as NAME.failed-TIME.jbx), so that a failed recording
// never becomes the test that passes from then on.
func (c *RecordCmd) supersede(ctx context.Context, env *Env, run func(tmp string) (*engine.Result, error)) error {
	stamp := time.Now().Format("20060102-150405.000")
	base := strings.TrimSuffix(c.Output, ".jbx")
	tmp := base + ".new-" + stamp + ".jbx"
	res, runErr := run(tmp)
	t, err := tapefmt.Open(tmp)
	if err != nil {
		os.Remove(tmp)
		return alongside(env, runErr, fmt.Errorf("--record-mode %s: the new tape did not read back (%v); %s is as it was", c.RecordMode, err, c.Output))
	}
	t.Close()
	if c.RecordMode == "new" && runErr == nil && res != nil && res.LiveCalls() == 0 {
		os.Remove(tmp)
		fmt.Fprintf(env.Stderr, "jukebox: %s holds every call the run made: nothing new to record (--record-mode new); it is as it was\n", c.Output)
		return nil
	}
	if why := failedAnew(runErr, res, c.Output); why != "" {
		failed := base + ".failed-" + stamp + ".jbx"
		if err := os.Rename(tmp, failed); err != nil {
			failed = tmp
		}
		return alongside(env, runErr, fmt.Errorf("--record-mode %s: the new recording failed (%s), and %s is as it was; the failed recording is %s",
			c.RecordMode, why, c.Output, filepath.Base(failed)))
	}
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

// alongside is the error of a --record-mode run that failed (runErr, its
// agent's exit code, already said: not printed again) with what became
// of the tapes (err), which is said either way.
func alongside(env *Env, runErr, err error) error {
	if runErr == nil {
		return withCode(ExitInternal, err)
	}
	fmt.Fprintf(env.Stderr, "jukebox: %v\n", err)
	return runErr
}

// failedAnew says how a new recording of the tape at path failed where
// the recorded run had not: its agent ended otherwise than the recorded
// one did, or a call never reached its upstream; "" when it did not (an
// agent recorded failing that fails alike is a recording all the same).
func failedAnew(runErr error, res *engine.Result, path string) string {
	if runErr == nil && (res == nil || res.LiveFailed == 0) {
		return ""
	}
	if res == nil {
		return runErr.Error()
	}
	if res.LiveFailed > 0 {
		return fmt.Sprintf("%d calls never reached their upstream: %s", res.LiveFailed, res.LiveError)
	}
	was, err := recordedEnd(path)
	if err == nil && was.ExitCode == res.End.ExitCode && was.Signal == res.End.Signal {
		return ""
	}
	return "the agent ended with " + engine.EndText(res.End)
}

// recordedEnd is the run.end of the tape at path.
func recordedEnd(path string) (tapefmt.RunEnd, error) {
	t, err := tapefmt.Open(path)
	if err != nil {
		return tapefmt.RunEnd{}, err
	}
	defer t.Close()
	end, ok, err := engine.ReadEnd(t)
	if err != nil || !ok {
		return tapefmt.RunEnd{}, errors.Join(err, errors.New("the tape holds no end of its run"))
	}
	return end, nil
}
