//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// oNoFollow makes an open fail on a final symlink instead of following it.
const oNoFollow = unix.O_NOFOLLOW

// writeNoPoll opens path with flag and perm and writes data to it through
// the descriptor alone. An *os.File registers every file it opens with
// the runtime's poller (on Linux four fcntl and an epoll_ctl that a
// regular file refuses): most of a small write's system calls.
func writeNoPoll(path string, flag int, perm fs.FileMode, data []byte) error {
	mode := unixMode(perm)
	fd, err := unix.Open(path, flag|unix.O_CLOEXEC, mode)
	for err == unix.EINTR {
		fd, err = unix.Open(path, flag|unix.O_CLOEXEC, mode)
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 {
		n, werr := unix.Write(fd, data)
		if werr == unix.EINTR {
			continue
		}
		if werr != nil {
			unix.Close(fd)
			return &fs.PathError{Op: "write", Path: path, Err: werr}
		}
		data = data[n:]
	}
	if err := unix.Close(fd); err != nil {
		return &fs.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}

// takeFingerprint stats the real path abs (rel in the workspace) without
// following a final symlink; a missing path is a fingerprint too.
func takeFingerprint(abs, rel string) (fingerprint, error) {
	var st unix.Stat_t
	err := unix.Lstat(abs, &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return fingerprint{Path: rel}, nil
	}
	if err != nil {
		return fingerprint{}, &fs.PathError{Op: "lstat", Path: abs, Err: err}
	}
	return fingerprint{
		Path: rel, Exists: true, Size: st.Size, Ino: st.Ino, Mode: uint32(st.Mode),
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(),
	}, nil
}

// touchMarker creates name and returns its change time: the file system's
// own clock at Begin, to compare real-side ctimes against.
func touchMarker(name string) (int64, error) {
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return 0, err
	}
	return st.Ctim.Nano(), nil
}

// inode returns fi's inode number, 0 if the file system gives none.
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// ownerChange is "uid:gid" of fi when it differs from lower's, else "".
func ownerChange(fi, lower fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	lst, lok := lower.Sys().(*syscall.Stat_t)
	if !ok || !lok || st.Uid == lst.Uid && st.Gid == lst.Gid {
		return ""
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// ownedByMe reports whether this process's user owns the file fi describes.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// linkCount returns how many hard links fi has, 0 if unknown.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}

// lockFile takes an exclusive lock on f, waiting for it.
func lockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX) }

// unlockFile releases lockFile's lock.
func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// tryLockFile takes f's lock without waiting: ErrInUse when another open
// file holds it.
func tryLockFile(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrInUse
	}
	return err
}

// entryOwner is the owner of a directory entry (an lstat); ok is false
// when it cannot be read (gone meanwhile).
func entryOwner(e fs.DirEntry) (uid, gid int, ok bool) {
	fi, err := e.Info()
	if err != nil {
		return 0, 0, false
	}
	return infoOwner(fi)
}

// infoOwner returns the uid and gid that own the file fi describes.
func infoOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
