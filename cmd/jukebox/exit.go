package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Exit codes. They are documented in README.md; keep the two in step.
const (
	ExitOK       = 0 // success
	ExitInternal = 1 // any other error (I/O, a child that could not start)
	ExitUsage    = 2 // bad flags or arguments
	ExitBadTape  = 3 // a tape is damaged: truncated, torn, tampered or not a tape
	ExitSeal     = 4 // a seal does not match the key, or the tape is not sealed
	ExitDiverged = 5 // replay met a request the tape does not hold
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

// report prints err and returns the exit code it maps to.
func report(w io.Writer, err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != errSilent {
			fmt.Fprintf(w, "jukebox: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(w, "jukebox: %v\n", err)
	var fe *tapefmt.FormatError
	switch {
	case errors.As(err, &fe):
		return ExitBadTape
	case errors.Is(err, tapefmt.ErrSeal), errors.Is(err, tapefmt.ErrNotSealed):
		return ExitSeal
	}
	return ExitInternal
}

// errSilent marks an error whose message the command already printed.
var errSilent = errors.New("silent")
