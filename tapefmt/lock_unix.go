//go:build unix

package tapefmt

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockWriting takes the writer's lock on the tape file (section 8.4 of
// FORMAT.md): an advisory flock the system lets go of when the file is
// closed or the process ends, however it ends.
func lockWriting(f *os.File) {
	_ = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) // best effort: a tape with no lock reads as not recording
}

// unlockWriting lets the writer's lock go before its file is closed: a
// child that another thread of the process is starting holds a copy of
// the file from its fork until its exec, and with it the lock.
func unlockWriting(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// recording reports whether another open file holds the writer's lock
// on the file f has open.
func recording(f *os.File) bool {
	fd := int(f.Fd())
	if err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	_ = unix.Flock(fd, unix.LOCK_UN)
	return false
}
