package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// chmodByPath changes the mode of base under pfd through an O_PATH
// descriptor, which needs no read permission and never follows a final
// symlink; the kernel resolves /proc/self/fd/N to that very inode.
func chmodByPath(pfd int, base string, mode uint32) error {
	fd, err := unix.Openat(pfd, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return ErrEscape
	}
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
}
