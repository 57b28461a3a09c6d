package sandbox

import (
	"bytes"
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

// originIs reports whether the staged entry up is a copy-up of the real
// entry real, as it is now: overlayfs's origin xattr holds the lower
// inode's file handle (struct ovl_fb: version, magic, length, flags,
// handle type, the layer's uuid, then the handle), compared with the
// handle name_to_handle_at gives real (a final symlink not followed:
// flags 0). A rename or link the agent made leaves the source's origin
// on the new name.
func originIs(up, real string) bool {
	for _, name := range []string{"user.overlay.origin", "trusted.overlay.origin"} {
		fb := make([]byte, 256)
		n, err := unix.Lgetxattr(up, name, fb)
		if err != nil {
			continue
		}
		fb = fb[:n]
		if len(fb) < 21 || fb[1] != 0xfb || int(fb[2]) != len(fb) {
			return false
		}
		h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, real, 0)
		return err == nil && h.Type() == int32(fb[4]) && bytes.Equal(h.Bytes(), fb[21:])
	}
	return false
}
