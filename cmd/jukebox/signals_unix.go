//go:build unix

package main

import (
	"os"
	"syscall"
)

// stopSignals are the signals main catches. While an agent runs it gets
// them: SIGTERM and SIGHUP are forwarded to it, while Ctrl-C (SIGINT) and
// Ctrl-\ (SIGQUIT) from the terminal reach it directly, as it shares
// jukebox's process group; jukebox lives on to close the tape after the
// agent exits. A booth's agent leads a session of its own (see sandbox):
// there the first of them stops the booth. Otherwise they cancel the
// command's context.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// brokenPipeSignals is SIGPIPE, which notifySignals catches.
var brokenPipeSignals = []os.Signal{syscall.SIGPIPE}
