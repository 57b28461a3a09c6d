package sandbox

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pumpStreams hands a confined child only standard streams that reopen as
// nothing of the host's: a pipe, a socket or a terminal passes as it is;
// any other file (a regular file, a device) is put behind a pipe that
// jukebox pumps, reading the file into the child's stdin, copying the
// child's stdout and stderr into theirs. A file's descriptor would reopen
// read-write by /proc/self/fd/N through the host's mount, not the booth's
// read-only one: the child could rewrite the `< task.md` it was given, or
// truncate the `> log`. Folders are refused before (CheckStreams).
func pumpStreams(o *ExecOptions) {
	o.Stdin = behindPipe(o.Stdin, func(f *os.File) io.Reader { return struct{ io.Reader }{f} })
	// The same file as stdout and stderr stays one writer (the structs
	// compare equal): exec then gives the child one pipe for both,
	// keeping their order.
	o.Stdout = behindPipe(o.Stdout, func(f *os.File) io.Writer { return struct{ io.Writer }{f} })
	o.Stderr = behindPipe(o.Stderr, func(f *os.File) io.Writer { return struct{ io.Writer }{f} })
}

// behindPipe is v, or, when v is a file that may not be passed as it is,
// wrap(v): no longer an *os.File, which exec connects through a pipe.
func behindPipe[T any](v T, wrap func(*os.File) T) T {
	if f, ok := any(v).(*os.File); ok && f != nil && !passedAsIs(f) {
		return wrap(f)
	}
	return v
}

// passedAsIs reports whether f may be a confined child's standard stream
// as it is: a pipe, a socket or a terminal.
func passedAsIs(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	switch m := fi.Mode(); {
	case m&(os.ModeNamedPipe|os.ModeSocket) != 0:
		return true
	case m&os.ModeCharDevice != 0:
		return isTerminal(f)
	}
	return false
}

// isTerminal reports whether f is a terminal (it answers TCGETS).
func isTerminal(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	rc.Control(func(fd uintptr) {
		_, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		tty = err == nil
	})
	return tty
}
