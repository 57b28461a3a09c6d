package sandbox

import (
	"fmt"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// boothPaths is what the booth shows outside the workspace, said where an
// agent could not start in it.
const boothPaths = "In the booth the workspace is staged; /tmp is the host's, read-only beneath the agent's own writes, " +
	"with its unix sockets (and folders the booth cannot read) hidden; /dev/shm, /dev and /run are the booth's own; " +
	"the booth's state is hidden; everything else is the host's, read-only"

// notStarted is the error for the init's report msg ("exec: ...", then
// maybe nsinit.MissingPrefix and the path that was not there) of an agent
// that could not start in the booth spec built: what failed, what the
// booth shows at the missing path, and what it shows elsewhere.
func notStarted(spec nsinit.Spec, msg string) error {
	msg = strings.TrimPrefix(msg, "exec: ")
	msg, missing, _ := strings.Cut(msg, nsinit.MissingPrefix)
	if missing != "" {
		if at := shownAt(spec, missing); at != "" {
			msg += "; " + at
		}
	}
	return fmt.Errorf("%w in the booth: %s. %s", ErrNotStarted, msg, boothPaths)
}

// shownAt says what the booth shows at p, where that is not the host's
// file read-only, or "".
func shownAt(spec nsinit.Spec, p string) string {
	for _, h := range spec.Hide {
		if nsinit.Within(p, h) {
			return h + " is hidden in the booth"
		}
	}
	switch {
	case nsinit.Within(p, spec.Lower):
		return "it is not in the staged workspace either"
	case nsinit.Within(p, "/dev/shm"):
		return "/dev/shm is the booth's own, empty: the host's is not visible (put the agent in the workspace or outside /dev/shm)"
	case nsinit.Within(p, "/run") || nsinit.Within(p, "/var/run"):
		return "/run is the booth's own, empty: the host's holds its sockets"
	case nsinit.Within(p, "/dev"):
		return "/dev is the booth's own: null, zero, full, random, urandom, tty and its own terminals"
	case nsinit.Within(p, "/tmp"):
		return "a folder of the host's /tmp that holds a unix socket, or that the booth cannot read, is hidden whole"
	}
	return "the booth shows the host's files there read-only: check it is there and executable"
}
