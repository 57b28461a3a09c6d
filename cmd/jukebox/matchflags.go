package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// matchFlags are the matching rules record, replay and fork take. Given to
// record, they are written into the tape (run.start's match), and every
// replay and fork of it uses them; given to replay or fork, they are for
// that run, and kept beside the tape (NAME.jbx.d/match.json) only with
// --remember-rules.
type matchFlags struct {
	Ignore      []string `placeholder:"PATH" help:"Leave this request field out of matching, by path: keys separated by dots, array positions as numbers, * for any one (messages.*.content, metadata.trace_id). Besides stream_options, user, metadata and service_tier. query:NAME names a query parameter (query:api-version; query:* every one), header:NAME a compared header field (header:range). On replay and fork, a path that matches nothing in the tape's requests is an error. Repeatable. Given to record, written into the tape."`
	Scrub       []string `sep:"none" placeholder:"REGEX" help:"Replace what this regular expression (Go RE2 syntax) matches in every string of both the recorded and the live request before comparing (timestamps, uuids): body strings, query values and compared header values. Repeatable. Given to record, written into the tape."`
	ScrubWith   string   `default:"<scrubbed>" placeholder:"TEXT" help:"What --scrub replaces a match with."`
	MatchConfig string   `type:"existingfile" placeholder:"FILE" help:"Matching rules as JSON: {\"ignore\": [PATH...], \"scrub\": [{\"pattern\": REGEX, \"with\": TEXT}]}. Given to record, written into the tape."`
}

// rememberFlag is replay's and fork's --remember-rules.
type rememberFlag struct {
	RememberRules bool `name:"remember-rules" help:"Keep the matching rules given here beside the tape (NAME.jbx.d/match.json), so later replays and forks of it use them too (replay --strict never does; jukebox rules TAPE shows and clears them)."`
}

// given returns the rules these flags give, compiled, and whether any were.
func (f matchFlags) given() (reqmatch.Rules, bool, error) {
	var r reqmatch.Rules
	if f.MatchConfig != "" {
		var err error
		if r, err = reqmatch.Load(f.MatchConfig); err != nil {
			return r, false, fmt.Errorf("--match-config %w", err)
		}
	}
	flags := reqmatch.Rules{Ignore: f.Ignore}
	for _, p := range f.Scrub {
		flags.Scrub = append(flags.Scrub, reqmatch.Scrub{Pattern: p, With: f.ScrubWith})
	}
	if err := flags.Compile(); err != nil {
		return r, false, fmt.Errorf("--%w", err) // "--scrub ...", "--ignore ..."
	}
	r = r.Merge(flags)
	return r, !r.Empty(), r.Compile()
}

// validate checks the flags before anything starts.
func (f matchFlags) validate() error {
	_, _, err := f.given()
	return err
}

// forTape returns the rules to write into a recording's tape (nil: none).
func (f matchFlags) forTape() *tapefmt.MatchRules {
	r, _, _ := f.given() // validated before the run
	return r.ForTape()
}

// rules are the rules for replaying or forking the tape: the defaults, the
// ones remembered beside it (not under strict), then these flags'; the
// tape's own are added when it is opened. Rules beside the tape are
// announced on w, whether they are applied or, under strict, not.
func (f matchFlags) rules(tape string, strict bool, w io.Writer) (*reqmatch.Rules, error) {
	more, _, err := f.given()
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	file := filepath.Join(sidecar.Dir(tape), reqmatch.FileName)
	kept, err := reqmatch.Remembered(sidecar.Dir(tape))
	switch {
	case err != nil && strict:
		// Not used, so not read: a file planted beside the tape cannot
		// stop a strict replay either.
		fmt.Fprintf(w, "jukebox: --strict: the matching rules beside the tape are not used (%s does not read: %v); jukebox rules --clear %s removes it\n", file, err, termtext.ShellQuote(tape))
	case err != nil:
		return nil, withCode(ExitUsage, fmt.Errorf("%w (the rules beside the tape: jukebox rules --clear %s removes the file)", err, termtext.ShellQuote(tape)))
	case kept.Empty():
	case strict:
		fmt.Fprintf(w, "jukebox: --strict: the matching rules beside the tape are not used (%s: %s); jukebox rules %s shows them, --clear removes them\n", file, kept, termtext.ShellQuote(tape))
	default:
		fmt.Fprintf(w, "jukebox: matching rules from %s applied: %s\n", file, kept)
	}
	r, err := engine.RulesFor(tape, more, !strict)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", sidecar.Dir(tape), err))
	}
	return r, nil
}

// remember keeps the rules the flags gave beside the tape, when asked
// (--remember-rules) and once the run has checked them against it (runErr
// is not an IgnoreError), saying so on w; a tape whose folder cannot be
// written keeps working, with a warning.
func (f matchFlags) remember(asked bool, tape string, runErr error, w io.Writer) {
	more, any, err := f.given()
	var ie *engine.IgnoreError
	if !asked || !any || err != nil || errors.As(runErr, &ie) {
		return
	}
	side := sidecar.Dir(tape)
	kept, _ := reqmatch.Remembered(side)
	if err := kept.Merge(more).Remember(side); err != nil {
		fmt.Fprintf(w, "jukebox: warning: the matching rules could not be remembered beside the tape: %v\n", err)
		return
	}
	fmt.Fprintf(w, "jukebox: matching rules remembered in %s; later replays and forks of this tape use them (not replay --strict); jukebox rules %s shows and clears them\n", side, termtext.ShellQuote(tape))
}
