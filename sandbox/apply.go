//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// applier writes changes into the real workspace through directory file
// descriptors opened one component at a time with O_NOFOLLOW, so a
// directory swapped for a symlink on the real side cannot redirect a
// write outside the workspace.
type applier struct {
	root   string
	upper  string
	rootFD int
	dirs   map[string]int
	// repeat is set when recovering: changes may already be applied.
	repeat bool
}

func newApplier(root, upper string) (*applier, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open workspace: %w", err)
	}
	return &applier{root: root, upper: upper, rootFD: fd, dirs: map[string]int{}}, nil
}

func (a *applier) close() {
	for _, fd := range a.dirs {
		unix.Close(fd)
	}
	unix.Close(a.rootFD)
}

// dirFD opens the real directory rel, refusing symlinks on the way.
func (a *applier) dirFD(rel string) (int, error) {
	if rel == "." || rel == "" {
		return a.rootFD, nil
	}
	if fd, ok := a.dirs[rel]; ok {
		return fd, nil
	}
	parent, err := a.dirFD(path.Dir(rel))
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(parent, path.Base(rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, pathErr("commit", rel, ErrEscape)
	}
	if err != nil {
		return -1, pathErr("commit", rel, err)
	}
	a.dirs[rel] = fd
	return fd, nil
}

// forget drops cached descriptors at or under rel after it was replaced.
func (a *applier) forget(rel string) {
	for k, fd := range a.dirs {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			unix.Close(fd)
			delete(a.dirs, k)
		}
	}
}

// apply makes one change real. Running it again gives the same result.
func (a *applier) apply(i int, c Change) error {
	pfd, err := a.dirFD(path.Dir(c.Path))
	if err != nil {
		return err
	}
	base := path.Base(c.Path)
	switch c.Op {
	case OpWrite:
		err = a.place(pfd, i, base, func(tmp string) error { return a.linkStaged(c, pfd, tmp) })
	case OpSymlink:
		err = a.place(pfd, i, base, func(tmp string) error { return unix.Symlinkat(c.Target, pfd, tmp) })
	case OpMkdir, OpReplaceDir:
		a.forget(c.Path)
		err = a.mkdir(pfd, base, c)
	case OpDelete:
		a.forget(c.Path)
		err = removeAt(pfd, base)
	case OpChmod, OpChmodDir:
		err = chmodAt(pfd, base, uint32(c.Mode.Perm()))
	default:
		err = fmt.Errorf("unknown op %q", c.Op)
	}
	if err != nil {
		return pathErr("commit "+string(c.Op), c.Path, err)
	}
	return nil
}

// place builds the new entry under a temporary name, then renames it over
// the target, removing a directory that stood there first. Leftovers of
// an interrupted earlier attempt (a stale temporary name) are cleared on
// the way, so place can be repeated.
func (a *applier) place(pfd, i int, base string, build func(tmp string) error) error {
	tmp := fmt.Sprintf(".jbx-%d.tmp", i)
	err := build(tmp)
	if errors.Is(err, unix.EEXIST) {
		unix.Unlinkat(pfd, tmp, 0)
		err = build(tmp)
	}
	if err != nil {
		return err
	}
	err = unix.Renameat(pfd, tmp, pfd, base)
	if errors.Is(err, unix.EISDIR) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		if err = removeAt(pfd, base); err == nil {
			err = unix.Renameat(pfd, tmp, pfd, base)
		}
	}
	if err != nil {
		return err
	}
	if a.repeat {
		// rename does nothing when both names already link the same
		// inode (a repeated apply): drop the temporary name then.
		if err := unix.Unlinkat(pfd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// linkStaged hard-links the staged file in as tmp, or copies it when the
// state directory lives on another file system.
func (a *applier) linkStaged(c Change, pfd int, tmp string) error {
	src := filepath.Join(a.upper, filepath.FromSlash(c.Path))
	err := unix.Linkat(unix.AT_FDCWD, src, pfd, tmp, 0)
	if !errors.Is(err, unix.EXDEV) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(c.Mode.Perm()))
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(c.Mode.Perm())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func (a *applier) mkdir(pfd int, base string, c Change) error {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	isDir := err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
	if err == nil && (!isDir || c.Op == OpReplaceDir) {
		if err := removeAt(pfd, base); err != nil {
			return err
		}
		isDir = false
	}
	if !isDir {
		if err := unix.Mkdirat(pfd, base, uint32(c.Mode.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
	}
	return chmodAt(pfd, base, uint32(c.Mode.Perm()))
}

// removeAt removes base (a whole tree if a directory) under pfd.
func removeAt(pfd int, base string) error {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(pfd, base, 0)
	}
	// os.RemoveAll walks with openat and never follows symlinks.
	return removeAll(fmt.Sprintf("/proc/self/fd/%d/%s", pfd, base))
}

// chmodAt changes the mode of base without following a symlink there.
func chmodAt(pfd int, base string, mode uint32) error {
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return ErrEscape
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, mode)
}
