package nsinit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// privateTmp is the booth's /tmp: an overlay whose lower layer is the
// host's /tmp, read-only beneath, and whose upper layer is a tmpfs of the
// run's own, mounted on s.TmpUpper in the booth's mount namespace alone,
// so that the agent's writes there are private and end with the run.
// Interpreters, venvs and scripts in the host's /tmp run in the booth.
//
// connect() to a unix socket through an overlay's lower layer reaches
// the host's listener: the command's connect(2) calls are made by the
// init, which looks a path in the booth's /tmp up in the upper layer
// alone (tmpUpper, unixconnect_linux.go).
func privateTmp(s Spec) (detached, error) {
	if s.TmpUpper == "" {
		return detached{}, errors.New("private /tmp: no folder for its upper layer")
	}
	if err := unix.Mount("tmpfs", s.TmpUpper, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	upper, work := filepath.Join(s.TmpUpper, "upper"), filepath.Join(s.TmpUpper, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return detached{}, fmt.Errorf("private /tmp: %w", err)
		}
	}
	if err := os.Chmod(upper, 0o1777); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	var err error
	if tmpUpper, err = unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return detached{}, fmt.Errorf("private /tmp: %w", err)
	}
	fd, err := overlayMount("/tmp", upper, work)
	if err != nil {
		return detached{}, fmt.Errorf("private /tmp over the host's: %w", err)
	}
	tmpUpperDev = upperDev(fd)
	return detached{fd: fd, path: "/tmp", what: "a private /tmp over the host's", rank: rankPrivate}, nil
}

// upperDev is the device number the overlay at root gives the files of
// its upper layer (each layer has its own, or all share the overlay's
// when their inode numbers are made unique): it makes a file there and
// removes it. 0 (no file of the overlay has it) when that fails.
func upperDev(root int) uint64 {
	const probe = ".jukebox-upper-probe"
	fd, err := unix.Openat(root, probe, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return 0
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if unix.Unlinkat(root, probe, 0) != nil || err != nil {
		return 0
	}
	return st.Dev
}
