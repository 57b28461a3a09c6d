package nsinit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// privateTmp is the booth's /tmp: an overlay whose lower layer is the
// host's /tmp, read-only beneath, and whose upper layer is a tmpfs of the
// run's own, mounted on s.TmpUpper in the booth's mount namespace alone,
// so that the agent's writes there are private and end with the run.
// Interpreters, venvs and scripts in the host's /tmp run in the booth.
//
// connect() to a unix socket through an overlay's lower layer reaches
// the host's listener, so the host's sockets are covered by whiteouts in
// the upper layer (hideTmpSockets) before the overlay is made.
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
	if err := hideTmpSockets(s, upper); err != nil {
		return detached{}, fmt.Errorf("private /tmp: hide the host's sockets: %w", err)
	}
	fd, err := overlayMount("/tmp", upper, work)
	if err != nil {
		return detached{}, fmt.Errorf("private /tmp over the host's: %w", err)
	}
	return detached{fd: fd, path: "/tmp", what: "a private /tmp over the host's", rank: rankPrivate}, nil
}

// hideTmpSockets walks the host's /tmp as the overlay's lower layer has
// it (that mount alone, not those below it) and writes a whiteout into
// upper for:
//
//   - each folder below /tmp that holds a socket, whole, so that a socket
//     made there during the run (tmux's next server, X11's next display)
//     is hidden too;
//   - each socket in /tmp itself, or in a folder that holds a path the
//     booth mounts (the workspace, the tape's folder, its state), which
//     must stay;
//   - each folder the init cannot read, whose sockets it cannot see
//     (a folder the agent may search but not list).
//
// Paths the booth mounts over are not walked: what lies beneath them is
// covered.
func hideTmpSockets(s Spec, upper string) error {
	root, err := unix.OpenTree(unix.AT_FDCWD, "/tmp", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	w := tmpWalk{lower: "/proc/self/fd/" + strconv.Itoa(root), mounted: mountedUnderTmp(s)}
	if err := w.walk("."); err != nil {
		return err // its sockets cannot be seen
	}
	for _, p := range w.hide {
		if err := whiteout(w.lower, upper, p); err != nil {
			return err
		}
	}
	return nil
}

// tmpWalk finds what hideTmpSockets hides: paths relative to /tmp.
type tmpWalk struct {
	lower   string   // the lower layer's root
	mounted []string // paths relative to /tmp the booth mounts over
	hide    []string
}

// walk walks dir; only an unreadable /tmp itself is an error.
func (w *tmpWalk) walk(dir string) error {
	ents, err := os.ReadDir(filepath.Join(w.lower, dir))
	switch {
	case err != nil && dir == ".":
		return err
	case errors.Is(err, fs.ErrNotExist):
		return nil // removed on the host meanwhile
	case err != nil:
		// Whole, even where it holds a path the booth mounts: the mount
		// point is then made in an opaque folder of the upper layer.
		w.hide = append(w.hide, dir)
		return nil
	}
	var socks []string
	for _, e := range ents {
		p := path.Join(dir, e.Name())
		switch {
		case e.Type()&fs.ModeSocket != 0:
			socks = append(socks, p)
		case e.IsDir() && !w.isMounted(p):
			w.walk(p)
		}
	}
	switch {
	case len(socks) == 0:
	case dir == "." || w.holdsMounted(dir):
		w.hide = append(w.hide, socks...)
	default:
		// Whole: what the walk of its subfolders found goes with it.
		for len(w.hide) > 0 && strings.HasPrefix(w.hide[len(w.hide)-1], dir+"/") {
			w.hide = w.hide[:len(w.hide)-1]
		}
		w.hide = append(w.hide, dir)
	}
	return nil
}

func (w *tmpWalk) isMounted(p string) bool {
	for _, m := range w.mounted {
		if m == p {
			return true
		}
	}
	return false
}

func (w *tmpWalk) holdsMounted(dir string) bool {
	for _, m := range w.mounted {
		if strings.HasPrefix(m, dir+"/") {
			return true
		}
	}
	return false
}

// mountedUnderTmp are the paths below /tmp the booth mounts over,
// relative to /tmp.
func mountedUnderTmp(s Spec) []string {
	all := append([]string{s.Lower}, s.Hide...)
	all = append(append(all, s.ReadOnly...), s.WriteLive...)
	for _, st := range s.Staged {
		all = append(all, st.Lower)
	}
	var out []string
	for _, p := range all {
		if rel, err := filepath.Rel("/tmp", p); err == nil && rel != "." && filepath.IsLocal(rel) {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// whiteout hides rel, relative to /tmp, with an overlayfs whiteout in
// upper, making its parents there with their modes in lower.
func whiteout(lower, upper, rel string) error {
	if parent := path.Dir(rel); parent != "." {
		var at string
		for _, d := range strings.Split(parent, "/") {
			at = path.Join(at, d)
			fi, err := os.Stat(filepath.Join(lower, at))
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed on the host since the walk: nothing to hide
			}
			if err != nil {
				return err
			}
			if err := os.Mkdir(filepath.Join(upper, at), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := os.Chmod(filepath.Join(upper, at), fi.Mode()&(fs.ModePerm|fs.ModeSticky)); err != nil {
				return err
			}
		}
	}
	if err := unix.Mknod(filepath.Join(upper, rel), unix.S_IFCHR|0o600, 0); err != nil {
		return fmt.Errorf("whiteout %s: %w", rel, err)
	}
	return nil
}
