//go:build unix

package tapestore

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByOther says whether fi is owned by a user other than this
// process's (its uid then).
func ownedByOther(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Getuid() {
		return 0, false
	}
	return int(st.Uid), true
}
