package sandbox

import (
	"errors"

	"golang.org/x/sys/unix"
)

// chmodByPath changes the mode of base under pfd through an O_PATH
// descriptor, which needs no read permission and never follows a final
// symlink; the kernel resolves /proc/self/fd/N to that very inode.
func chmodByPath(pfd int, base string, mode uint32) error {
	err := withInode(pfd, base, func(proc string, _ *unix.Stat_t) error { return unix.Chmod(proc, mode) })
	if errors.Is(err, errXattrOnSymlink) {
		return ErrEscape // a symlink has no mode of its own to change
	}
	return err
}
