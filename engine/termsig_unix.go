//go:build unix && !linux

package engine

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// terminalSentIt reports whether s is a Ctrl-C or Ctrl-\ from the terminal,
// which the kernel has already delivered to the child: it shares jukebox's
// process group, and that group is the terminal's foreground. Forwarding it
// again would interrupt the agent twice.
func terminalSentIt(s os.Signal) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT {
		return false
	}
	fg, err := unix.IoctlGetInt(int(os.Stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == syscall.Getpgrp()
}
