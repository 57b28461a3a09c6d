//go:build unix

package engine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// signalName is the signal's name as the tape records it, e.g. "SIGTERM".
func signalName(s syscall.Signal) string { return unix.SignalName(s) }
