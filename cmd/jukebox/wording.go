package main

import (
	"errors"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
)

// flagWords are the engine's and the sandbox's errors that concern a flag,
// in the CLI's words: the packages below name their options, the CLI names
// its flags.
var flagWords = []struct {
	err   error
	words string
}{
	{engine.ErrNoAsk, "booth: --commit ask needs a terminal to ask on"},
	{sandbox.ErrCannotConfine, "booth: cannot confine the agent here, so it was not started " +
		"(to run it unconfined on purpose, in a copy of the workspace that keeps it from nothing else: --booth-mode copy)"},
}

// inFlagWords is err with each error of flagWords that it holds said in the
// CLI's words. errors.Is and errors.As see through it as before.
func inFlagWords(err error) error {
	msg := err.Error()
	// kong names a tape argument that does not check by its placeholder.
	for _, p := range []string{"<tape>: ", "<tapes> ...: ", "<tape> ...: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			msg = "tape " + strings.TrimPrefix(rest, "stat ") // kong's existingfile
		}
	}
	for _, w := range flagWords {
		if errors.Is(err, w.err) {
			msg = strings.ReplaceAll(msg, w.err.Error(), w.words)
		}
	}
	if msg == err.Error() {
		return err
	}
	return &reworded{err: err, msg: msg}
}

// reworded is an error with its message said in the CLI's words.
type reworded struct {
	err error
	msg string
}

func (r *reworded) Error() string { return r.msg }
func (r *reworded) Unwrap() error { return r.err }
