package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the whole file system holding the open descriptor fd.
func syncFS(fd int) error { return unix.Syncfs(fd) }

// cloneFile makes dst share src's extents (a reflink, FICLONE); it fails
// where the file system cannot clone.
func cloneFile(dst, src *os.File) error { return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())) }
