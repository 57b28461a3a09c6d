//go:build unix

package sandbox

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid that owns fi.
func fileOwner(fi fs.FileInfo) (int, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), true
	}
	return -1, false
}

// devIno returns the device and inode numbers of fi, which name one
// directory for as long as it exists.
func devIno(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
