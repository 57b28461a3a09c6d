package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// What a commit keeps besides content and mode, as a plain run would
// leave it: extended attributes in the user namespace (never overlayfs's
// own) and modification times.

// errXattrOnSymlink reports extended attributes asked of a symlink: the
// user namespace has none there.
var errXattrOnSymlink = errors.New("symlinks carry no user extended attributes")

// userXattrs returns the user.* extended attributes of p, without
// following a final symlink and leaving out overlayfs's own; nil when
// there are none or the file system keeps none.
func userXattrs(p string) (map[string][]byte, error) {
	return readXattrs(p, unix.Llistxattr, unix.Lgetxattr)
}

func readXattrs(p string, list func(string, []byte) (int, error), get func(string, string, []byte) (int, error)) (map[string][]byte, error) {
	names, err := xattrNames(p, list)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	out := make(map[string][]byte, len(names))
	for _, name := range names {
		v, err := xattrValue(p, name, get)
		if errors.Is(err, unix.ENODATA) {
			continue // removed since it was listed
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getxattr " + name, Path: p, Err: err}
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// xattrNames lists the user.* names of p that are not overlayfs's own.
func xattrNames(p string, list func(string, []byte) (int, error)) ([]string, error) {
	for range 8 {
		n, err := list(p, nil)
		if errors.Is(err, unix.ENOTSUP) {
			return nil, nil
		}
		if err != nil || n == 0 {
			return nil, pathErrOrNil("listxattr", p, err)
		}
		buf := make([]byte, n)
		n, err = list(p, buf)
		if errors.Is(err, unix.ERANGE) {
			continue // grew since the first call
		}
		if err != nil {
			return nil, pathErrOrNil("listxattr", p, err)
		}
		var names []string
		for _, b := range bytes.Split(buf[:n], []byte{0}) {
			if name := string(b); strings.HasPrefix(name, "user.") && !isOverlayXattr(name) {
				names = append(names, name)
			}
		}
		return names, nil
	}
	return nil, &fs.PathError{Op: "listxattr", Path: p, Err: unix.ERANGE}
}

func xattrValue(p, name string, get func(string, string, []byte) (int, error)) ([]byte, error) {
	for range 8 {
		n, err := get(p, name, nil)
		if err != nil {
			return nil, err
		}
		buf := make([]byte, n)
		if n == 0 {
			return buf, nil
		}
		n, err = get(p, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		return buf[:n], err
	}
	return nil, unix.ERANGE
}

func pathErrOrNil(op, p string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: p, Err: err}
}

// copyXattrs gives to the user.* extended attributes of from, leaving
// out overlayfs's own: a copy-up keeps what the agent would see, and a
// real entry that carries overlay attributes (planted, or left by an
// earlier release) cannot make a staged directory opaque.
func copyXattrs(from, to string) error {
	attrs, err := userXattrs(from)
	if err != nil {
		return err
	}
	for name, v := range attrs {
		if err := unix.Lsetxattr(to, name, v, 0); err != nil {
			return &fs.PathError{Op: "setxattr " + name, Path: to, Err: err}
		}
	}
	return nil
}

// withInode opens name under dirfd with O_PATH, never following a final
// symlink, and calls fn with a /proc path that names that very inode
// (as chmodByPath does), so that attributes change on what was opened.
func withInode(dirfd int, name string, fn func(proc string, st *unix.Stat_t) error) error {
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return errXattrOnSymlink
	}
	return fn(fmt.Sprintf("/proc/self/fd/%d", fd), &st)
}

// asWritable runs fn, which changes the extended attributes of proc;
// when that is refused because the owner may not write the inode (a
// read-only file), it makes the inode writable by its owner for the
// while and gives the mode back after.
func asWritable(proc string, st *unix.Stat_t, fn func() error) error {
	err := fn()
	if !errors.Is(err, unix.EACCES) || st.Mode&0o200 != 0 || int(st.Uid) != os.Geteuid() {
		return err
	}
	mode := uint32(st.Mode & 0o7777)
	if unix.Chmod(proc, mode|0o200) != nil {
		return err
	}
	err = fn()
	if cerr := unix.Chmod(proc, mode); err == nil {
		err = cerr
	}
	return err
}

// xattrsAt returns the user.* extended attributes of base under pfd
// (none for a symlink).
func xattrsAt(pfd int, base string) (map[string][]byte, error) {
	var out map[string][]byte
	err := withInode(pfd, base, func(proc string, _ *unix.Stat_t) error {
		var err error
		out, err = readXattrs(proc, unix.Listxattr, unix.Getxattr)
		return err
	})
	if errors.Is(err, errXattrOnSymlink) {
		return nil, nil
	}
	return out, err
}

// setXattrsAt makes the user.* extended attributes of base under pfd
// (overlayfs's own aside) exactly want: each set, every other removed.
func setXattrsAt(pfd int, base string, want map[string][]byte) error {
	err := withInode(pfd, base, func(proc string, st *unix.Stat_t) error {
		have, err := readXattrs(proc, unix.Listxattr, unix.Getxattr)
		if err != nil {
			return err
		}
		return asWritable(proc, st, func() error {
			for name := range have {
				if _, keep := want[name]; !keep {
					if err := unix.Removexattr(proc, name); err != nil && !errors.Is(err, unix.ENODATA) {
						return fmt.Errorf("removexattr %s: %w", name, err)
					}
				}
			}
			for name, v := range want {
				if old, ok := have[name]; ok && bytes.Equal(old, v) {
					continue
				}
				if err := unix.Setxattr(proc, name, v, 0); err != nil {
					return fmt.Errorf("setxattr %s: %w", name, err)
				}
			}
			return nil
		})
	})
	if errors.Is(err, errXattrOnSymlink) && len(want) == 0 {
		return nil
	}
	return err
}

// stripUncommitted removes from the staged entry p the extended
// attributes a commit does not carry (uncommittedXattr): overlayfs's own,
// POSIX ACLs and file capabilities, so that a file linked into the
// workspace holds none of them. The staged inode is what is linked: an
// ACL the agent set on a new file granted another user write access the
// review did not show (the change set lists modes and user.*
// attributes). Repeating it is harmless.
func stripUncommitted(p string) error {
	err := withInode(unix.AT_FDCWD, p, func(proc string, st *unix.Stat_t) error {
		var names []string
		for range 8 {
			n, err := unix.Listxattr(proc, nil)
			if errors.Is(err, unix.ENOTSUP) || err == nil && n == 0 {
				return nil
			}
			if err != nil {
				return err
			}
			buf := make([]byte, n)
			if n, err = unix.Listxattr(proc, buf); errors.Is(err, unix.ERANGE) {
				continue
			} else if err != nil {
				return err
			}
			for _, b := range bytes.Split(buf[:n], []byte{0}) {
				if uncommittedXattr(string(b)) {
					names = append(names, string(b))
				}
			}
			break
		}
		if len(names) == 0 {
			return nil
		}
		return asWritable(proc, st, func() error {
			for _, name := range names {
				if err := unix.Removexattr(proc, name); err != nil && !errors.Is(err, unix.ENODATA) {
					return fmt.Errorf("removexattr %s: %w", name, err)
				}
			}
			return nil
		})
	})
	if errors.Is(err, errXattrOnSymlink) {
		return nil
	}
	return err
}

// setMtimeAt sets the modification time of base under pfd, without
// following a symlink there; the access time is left alone.
func setMtimeAt(pfd int, base string, t time.Time) error {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: t.Unix(), Nsec: int64(t.Nanosecond())}}
	return unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// copyFDMeta gives the copy out (made with mode perm) what in, which fi
// describes, has besides content, as cp -p would: its user extended
// attributes (not overlayfs's) and modification time.
func copyFDMeta(out, in int, perm uint32, fi fs.FileInfo) error {
	attrs, err := readXattrs(fmt.Sprintf("/proc/self/fd/%d", in), unix.Listxattr, unix.Getxattr)
	if err != nil {
		return err
	}
	if len(attrs) > 0 {
		if perm&0o200 == 0 { // setting them needs write access
			if err := unix.Fchmod(out, perm|0o200); err != nil {
				return err
			}
			defer unix.Fchmod(out, perm)
		}
		for name, v := range attrs {
			if err := unix.Fsetxattr(out, name, v, 0); err != nil {
				return fmt.Errorf("setxattr %s: %w", name, err)
			}
		}
	}
	mt := fi.ModTime()
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: mt.Unix(), Nsec: int64(mt.Nanosecond())}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", out), ts, 0)
}

// ctimeOf returns fi's change time in nanoseconds, 0 if unknown.
func ctimeOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}

// setLinkMtime sets the modification time of p, a symlink itself.
func setLinkMtime(p string, t time.Time) error { return setMtimeAt(unix.AT_FDCWD, p, t) }
