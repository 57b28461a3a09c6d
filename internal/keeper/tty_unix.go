//go:build unix

package keeper

import "golang.org/x/sys/unix"

// foreground is the foreground process group of the terminal on fd.
func foreground(fd int) (int, error) { return unix.IoctlGetInt(fd, unix.TIOCGPGRP) }

// setForeground makes pgid the foreground process group of the terminal
// on fd.
func setForeground(fd, pgid int) error { return unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, pgid) }
