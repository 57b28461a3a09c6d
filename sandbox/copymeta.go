package sandbox

import (
	"io/fs"
	"os"
)

// What the copy fallback keeps beyond a file's content and mode: a
// symlink's own mtime, the mode of the workspace folder itself, and a
// file its owner cannot read.

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

// locked reports whether fi is a file of this user's that its owner may
// not read (chmod 000), which only root reads as it is.
func locked(fi fs.FileInfo) bool {
	return fi.Mode().Perm()&0o400 == 0 && os.Geteuid() != 0 && ownedByMe(fi)
}

// copyLocked copies the locked file e (at p, to to): it gives the file's
// owner read for the while, as chmod u+r would, and then its mode back,
// as the copy's is (a plain run's agent could do the same). The snapshot
// s then takes the real file as it is after that (its change time
// moved), so the commit does not call the booth's own chmod a change on
// the real side.
func (r *copyRun) copyLocked(p string, e entry, to string, s *snapEntry) (copyStamp, bool, error) {
	perm := modeBits(e.info.Mode())
	if err := os.Chmod(e.abs, perm|0o400); err != nil {
		return copyStamp{}, false, err
	}
	stamp, cloned, err := copyRegular(e.abs, to, e.info, r.clone >= 0)
	if cerr := os.Chmod(e.abs, perm); err == nil {
		err = cerr
	}
	if fi, lerr := os.Lstat(e.abs); err == nil && lerr == nil && e.layer == layerLower {
		s.real, s.hasReal = fingerprintOf(p, fi)
	}
	return stamp, cloned, err
}
