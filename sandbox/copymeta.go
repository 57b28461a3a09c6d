package sandbox

import (
	"io/fs"
	"os"
)

// What the copy fallback keeps beyond a file's content and mode: a
// symlink's own mtime, and the mode of the workspace folder itself.

// linkTime gives the copy's symlink to the real link's mtime (which fi
// describes), as cp -p does, and returns the time it has, for the fold
// to tell a touch -h.
func (r *copyRun) linkTime(to string, fi fs.FileInfo) int64 {
	setLinkMtime(to, fi.ModTime()) // best effort: the stamp says what it got
	if got, err := os.Lstat(to); err == nil {
		return got.ModTime().UnixNano()
	}
	return 0
}

// foldRoot stages a chmod of the copy's top, the workspace folder itself:
// the staging area's top takes its mode, as the overlay's would (Diff's
// diffRoot finds it there).
func (r *copyRun) foldRoot() error {
	fi, err := os.Lstat(r.root)
	if err != nil || modeBits(fi.Mode()) == r.rootMode {
		return err
	}
	r.tx.mu.Lock()
	defer r.tx.mu.Unlock()
	return os.Chmod(r.tx.upper, modeBits(fi.Mode()))
}
