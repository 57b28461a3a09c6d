//go:build linux || darwin

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

type termState = unix.Termios

func getTermState(f *os.File) (*termState, error) {
	return unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
}

// setTermState sets st on f's terminal, discarding unread input first when
// flush is set. A process in the background of its own terminal leaves the
// settings alone: setting them would stop it (SIGTTOU), and the terminal
// belongs to the foreground job then.
func setTermState(f *os.File, st *termState, flush bool) {
	fd := int(f.Fd())
	if fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && fg != unix.Getpgrp() {
		return // a terminal that is not ours (err) has no job control
	}
	req := uint(ioctlSetTermios)
	if flush {
		req = ioctlSetTermiosFlush
	}
	unix.IoctlSetTermios(fd, req, st)
}
