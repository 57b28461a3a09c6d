package nsinit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
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
//     (a folder the agent may search but not list), or deeper than
//     maxTmpDepth.
//
// Paths the booth mounts over are not walked: what lies beneath them is
// covered.
func hideTmpSockets(s Spec, upper string) error {
	root, err := unix.OpenTree(unix.AT_FDCWD, "/tmp", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(root)
	top, err := unix.Openat(root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err // its sockets cannot be seen
	}
	w := tmpWalk{mounted: mountedUnderTmp(s)}
	if err := w.walk(top, ".", 0); err != nil {
		return err
	}
	up, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(up)
	for _, p := range w.hide {
		if err := whiteout(root, up, strings.Split(p, "/")); err != nil {
			return err
		}
	}
	return nil
}

// tmpWalk finds what hideTmpSockets hides: paths relative to /tmp. It
// walks by descriptors, one name at a time, so that no path is too long.
type tmpWalk struct {
	mounted []string // paths relative to /tmp the booth mounts over
	hide    []string
}

// maxTmpDepth: a folder deeper below /tmp is hidden whole, unwalked.
const maxTmpDepth = 64

// walk walks the folder open at fd (closing it), dir relative to /tmp;
// only an unreadable /tmp itself is an error.
func (w *tmpWalk) walk(fd int, dir string, depth int) error {
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close() // after the subfolders, opened from it
	ents, err := f.ReadDir(-1)
	switch {
	case err != nil && dir == ".":
		return err
	case err != nil:
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
			w.sub(fd, e.Name(), p, depth+1)
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

// sub walks the folder name in the one open at parent (p relative to
// /tmp). One it cannot open or read, or too deep, is hidden whole, even
// where it holds a path the booth mounts: the mount point is then made in
// an opaque folder of the upper layer. One removed meanwhile is skipped.
func (w *tmpWalk) sub(parent int, name, p string, depth int) {
	if depth > maxTmpDepth {
		w.hide = append(w.hide, p)
		return
	}
	fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP):
		// removed, or replaced by a file or symlink, on the host meanwhile
	case err != nil:
		w.hide = append(w.hide, p)
	default:
		w.walk(fd, p, depth)
	}
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

// whiteout hides the path comps, relative to /tmp (lower, the lower
// layer's root), with an overlayfs whiteout in the upper layer (open at
// upper), making its parents there with their modes in lower. A path
// removed on the host since the walk is left.
func whiteout(lower, upper int, comps []string) error {
	lo, err := unix.Openat(lower, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	up, err := unix.Dup(upper)
	if err != nil {
		unix.Close(lo)
		return err
	}
	defer func() { unix.Close(lo); unix.Close(up) }()
	last := len(comps) - 1
	for _, c := range comps[:last] {
		var st unix.Stat_t
		if err := unix.Fstatat(lo, c, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) || err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil
		} else if err != nil {
			return err
		}
		if err := unix.Mkdirat(up, c, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		if err := unix.Fchmodat(up, c, st.Mode&0o7777, 0); err != nil {
			return err
		}
		nlo, err := unix.Openat(lo, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // gone meanwhile
		}
		nup, err := unix.Openat(up, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(nlo)
			return err
		}
		unix.Close(lo)
		unix.Close(up)
		lo, up = nlo, nup
	}
	if err := unix.Mknodat(up, comps[last], unix.S_IFCHR|0o600, 0); err != nil {
		return fmt.Errorf("whiteout %s: %w", strings.Join(comps, "/"), err)
	}
	return nil
}
