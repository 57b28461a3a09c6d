package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/tapestore"
)

// Exit codes. They are documented in docs/exit-codes.md; keep the two in step.
const (
	ExitOK       = 0 // success
	ExitInternal = 1 // any other error (I/O, a child that could not start)
	ExitUsage    = 2 // bad flags or arguments
	ExitBadTape  = 3 // a tape is damaged: truncated, torn, tampered or not a tape
	ExitSeal     = 4 // a seal does not match the key, or the tape is not sealed
	ExitDiverged = 5 // replay met a request the tape does not hold
	ExitDiffers  = 6 // replay --strict: the run did not reproduce the recording
	ExitTripped  = 7 // the circuit breaker stopped the run
	ExitRefused  = 8 // the booth refused entries it cannot commit and kept the transaction open
	// ExitInterrupted: a booth run was interrupted (Ctrl-C, SIGTERM), while
	// the agent ran or at the question, and nothing was committed; or a run
	// outside the booth was interrupted (Ctrl-C, SIGINT).
	ExitInterrupted = 130
)

// exitError lets a command choose its exit code while still printing a message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// report prints err (unless it is errSilent), in the CLI's words
// (inFlagWords), and returns its exit code.
func report(w io.Writer, err error) int {
	if !errors.Is(err, errSilent) {
		// Sanitized: a message names files and keys, which may hold
		// what a terminal would act on (a name that clears its line).
		fmt.Fprintf(w, "jukebox: %s\n", termtext.Sanitize(inFlagWords(err).Error()))
	}
	return codeFor(err)
}

// agentEnd is how the agent ended, after "ahead of the agent's": "exit
// 1", or "end (killed by SIGTERM)" (it read "the agent's killed by ...").
func agentEnd(end tapefmt.RunEnd) string {
	text := engine.EndText(end)
	if strings.HasPrefix(text, "exit ") {
		return text
	}
	return "end (" + text + ")"
}

// codeFor maps an error to its exit code.
func codeFor(err error) int {
	var ee *exitError
	var fe *tapefmt.FormatError
	var te *engine.TapeError
	var ie *engine.IgnoreError
	var rc *engine.RedactedCommandError
	var oe *engine.OverrideError
	switch {
	case errors.As(err, &te):
		return ExitBadTape // ahead of any other code: the record is at fault
	case errors.As(err, &ie), errors.As(err, &rc), errors.As(err, &oe), errors.Is(err, engine.ErrNoForkPoint),
		errors.Is(err, sandbox.ErrCannotConfine), // the flag to run unconfined is named
		errors.Is(err, sandbox.ErrNoTx),          // --tx named one that is not there
		errors.Is(err, engine.ErrNothingToPack):
		return ExitUsage
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &fe), errors.Is(err, tapefmt.ErrNoFooter), errors.Is(err, tapestore.ErrDamaged),
		errors.Is(err, tapefmt.ErrBlobNotFound), errors.Is(err, engine.ErrNoRunStart): // a frame names a blob the tape lacks; cut before its first frame
		return ExitBadTape
	case errors.Is(err, tapefmt.ErrSeal), errors.Is(err, tapefmt.ErrNotSealed):
		return ExitSeal
	}
	return ExitInternal
}

// errSilent marks an error whose message the command already printed.
var errSilent = errors.New("silent")

// refusedExit is exit 8 when the booth kept a run's transaction open
// because it refused entries it cannot commit: ahead of the agent's own
// code (printed all the same), behind an unreadable tape (exit 3).
func refusedExit(res *engine.Result) error {
	if res == nil || res.Booth == nil || !res.Booth.Refused {
		return nil
	}
	return withCode(ExitRefused, fmt.Errorf("booth: refused entries: %d; transaction %s kept open for you to decide "+
		"(exit %d, ahead of the agent's %s)", res.Booth.RefusedCount(), res.Booth.Tx, ExitRefused, agentEnd(res.End)))
}

// interruptedExit is exit 130 when a stop signal interrupted a booth run,
// while the agent ran or at the question, or a SIGINT a run outside it: ahead of exit 8 and the agent's
// own code, behind an unreadable tape (exit 3). printBooth said what
// became of the transaction.
func interruptedExit(res *engine.Result) error {
	if res != nil && res.Booth == nil && res.End.Reason == tapefmt.ReasonInterrupted {
		// Outside the booth, as in it: Ctrl-C (SIGINT) ends in 130.
		return withCode(ExitInterrupted, fmt.Errorf("interrupted (exit %d, ahead of the agent's %s)",
			ExitInterrupted, agentEnd(res.End)))
	}
	if res == nil || res.Booth == nil || !res.Booth.Interrupted {
		return nil
	}
	return withCode(ExitInterrupted, fmt.Errorf("booth: interrupted; nothing was committed (exit %d, ahead of the agent's %s)",
		ExitInterrupted, agentEnd(res.End)))
}
