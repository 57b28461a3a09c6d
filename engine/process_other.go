//go:build !unix

package engine

import (
	"os"
	"syscall"
)

// terminalSentIt reports whether s is a Ctrl-C from the console. On
// Windows the console delivers it to every process attached to it, the
// child included, so it is never forwarded (nor can it be: os.Process
// cannot send it there).
func terminalSentIt(s os.Signal) bool { return s == syscall.SIGINT }

// signalName is the signal's name as the tape records it. Windows has no
// signal names of its own; a process ends with an exit code there.
func signalName(s syscall.Signal) string { return s.String() }
