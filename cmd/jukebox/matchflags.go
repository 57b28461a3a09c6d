package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// matchFlags are the matching rules replay and fork take. Rules given here
// are remembered in the tape's sidecar folder (NAME.jbx.d/match.json), so
// later replays and forks of that tape, the turntable's included, use them
// without being told again.
type matchFlags struct {
	Ignore      []string `placeholder:"PATH" help:"Leave this request field out of matching, by path: keys separated by dots, array positions as numbers, * for any one (messages.*.content, metadata.trace_id). Besides stream_options, user, metadata and service_tier. query:NAME names a query parameter (query:api-version; query:* every one), header:NAME a compared header field (header:range). A path that matches nothing in the tape's requests is an error. Repeatable; remembered beside the tape."`
	Scrub       []string `placeholder:"REGEX" help:"Replace what this regular expression (Go RE2 syntax) matches in every string of both the recorded and the live request before comparing (timestamps, uuids): body strings, query values and compared header values. Repeatable; remembered beside the tape."`
	ScrubWith   string   `default:"<scrubbed>" placeholder:"TEXT" help:"What --scrub replaces a match with."`
	MatchConfig string   `type:"existingfile" placeholder:"FILE" help:"Matching rules as JSON: {\"ignore\": [PATH...], \"scrub\": [{\"pattern\": REGEX, \"with\": TEXT}]}. Remembered beside the tape."`
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

// rules are the rules for replaying or forking the tape: the defaults, the
// ones remembered beside it, then these flags'.
func (f matchFlags) rules(tape string) (*reqmatch.Rules, error) {
	more, _, err := f.given()
	if err != nil {
		return nil, withCode(ExitUsage, err)
	}
	r, err := engine.RulesFor(tape, more)
	if err != nil {
		return nil, withCode(ExitUsage, fmt.Errorf("%s: %w", tapefmt.Sidecar(tape), err))
	}
	return r, nil
}

// remember keeps the rules the flags gave beside the tape, once the run
// has checked them against it (runErr is not an IgnoreError), saying so
// on w; a tape whose folder cannot be written keeps working, with a
// warning.
func (f matchFlags) remember(tape string, runErr error, w io.Writer) {
	more, any, err := f.given()
	var ie *engine.IgnoreError
	if !any || err != nil || errors.As(runErr, &ie) {
		return
	}
	side := tapefmt.Sidecar(tape)
	kept, _ := reqmatch.Remembered(side)
	if err := kept.Merge(more).Remember(side); err != nil {
		fmt.Fprintf(w, "jukebox: warning: the matching rules could not be remembered beside the tape: %v\n", err)
		return
	}
	fmt.Fprintf(w, "jukebox: matching rules remembered in %s; later replays and forks of this tape use them\n", side)
}
