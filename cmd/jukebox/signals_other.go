//go:build !unix

package main

import (
	"os"
	"syscall"
)

// stopSignals are the signals main catches: on Windows, a Ctrl-C or
// Ctrl-Break from the console (os.Interrupt), which reaches the agent from
// the console too, and the console being closed, the user logging off or
// the system shutting down (SIGTERM). There is no SIGHUP to catch.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// brokenPipeSignals is empty: Windows has no SIGPIPE.
var brokenPipeSignals []os.Signal
