//go:build unix

package sandbox

import (
	"bytes"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// The staging area's overlayfs upper-dir format: a whiteout is a
// character device 0/0, an opaque directory carries an xattr.

// isWhiteout reports whether fi is an overlayfs whiteout.
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Rdev == 0
}

// isOpaque reports whether dir replaces the directory below it. The
// names of dir's extended attributes come first, in one call: most
// directories have none (or none of overlayfs's), and need no other.
func isOpaque(dir string) bool {
	var names [512]byte
	if n, err := unix.Llistxattr(dir, names[:]); err == nil {
		found := false
		for name := range bytes.SplitSeq(names[:n], []byte{0}) {
			if string(name) == xattrOpaque || string(name) == xattrTrustedOpaque {
				found = true
			}
		}
		if !found {
			return false
		}
	} // a list too long for names, or none to be had: ask for each
	buf := make([]byte, 4)
	for _, name := range []string{xattrOpaque, xattrTrustedOpaque} {
		n, err := unix.Lgetxattr(dir, name, buf)
		if err == nil && n == 1 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// mkWhiteout makes an overlayfs whiteout (char device 0/0). Linux allows
// it without privilege since 5.8.
func mkWhiteout(p string) error {
	if err := unix.Mknod(p, unix.S_IFCHR|0o600, 0); err != nil {
		return &fs.PathError{Op: "mknod whiteout", Path: p, Err: err}
	}
	return nil
}

// setOpaque marks dir as replacing the directory below it.
func setOpaque(dir string) error {
	if err := unix.Lsetxattr(dir, xattrOpaque, []byte("y"), 0); err != nil {
		return &fs.PathError{Op: "set opaque", Path: dir, Err: err}
	}
	return nil
}
