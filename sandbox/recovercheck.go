//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
)

// realChanged lists the paths of a decided commit whose real side is
// neither as it was when the commit was decided (the journal's Before)
// nor as applying them leaves them (the staged inode linked in, the
// symlink made, the path deleted, the directory made, the inode kept)
// nor in between (its original moved aside): what the user changed
// after a crash. Recover applies nothing over them.
func (r *commitRun) realChanged() ([]Conflict, error) {
	a, logged, err := r.applier(false)
	if err != nil {
		return nil, err
	}
	defer a.close()
	var out []Conflict
	for i, c := range r.j.Changes {
		if c.Implied || i >= len(r.j.Before) || r.j.Before[i].Exists && r.j.Before[i].Ino == 0 {
			continue // no fingerprint to compare with
		}
		now, err := takeFingerprint(filepath.Join(r.w.root, filepath.FromSlash(c.Path)), c.Path)
		if err != nil {
			return nil, err
		}
		was := r.j.Before[i]
		inBetween := !now.Exists && (a.moved[i] || logged[i] != (asideEntry{}))
		if sameEntry(now, was) || inBetween || r.appliedAs(c, now, was) {
			continue
		}
		out = append(out, Conflict{Path: c.Path, Reason: "changed since the commit was decided"})
	}
	return out, nil
}

// sameEntry is verify's test: the same kind, inode and mode, and for
// anything but a directory the same size and mtime.
func sameEntry(now, was fingerprint) bool {
	if now.Exists != was.Exists {
		return false
	}
	if !now.Exists {
		return true
	}
	same := now.Ino == was.Ino && now.Mode == was.Mode
	return same && (now.isDir() || now.Size == was.Size && now.Mtime == was.Mtime)
}

// appliedAs reports whether now is what applying c leaves at its path.
func (r *commitRun) appliedAs(c Change, now, was fingerprint) bool {
	staged := filepath.Join(r.dir, "upper", filepath.FromSlash(c.Path))
	switch c.Op {
	case OpWrite:
		// The staged inode itself is linked in, so an edit in place
		// changes both: its size and mtime are the journal's.
		up, err := takeFingerprint(staged, c.Path)
		same := err == nil && now.Exists && up.Exists && now.Ino == up.Ino && now.Size == c.Size
		return same && (c.Mtime.IsZero() || now.Mtime == c.Mtime.UnixNano())
	case OpSymlink:
		target, err := os.Readlink(filepath.Join(r.w.root, filepath.FromSlash(c.Path)))
		return err == nil && target == c.Target
	case OpDelete:
		return !now.Exists
	case OpMkdir, OpReplaceDir:
		return now.isDir()
	case OpChmodDir:
		return now.Exists && now.Ino == was.Ino
	case OpChmod: // the inode kept, its content too; the mtime old or the journal's
		same := now.Exists && now.Ino == was.Ino && now.Size == was.Size
		return same && (now.Mtime == was.Mtime || !c.Mtime.IsZero() && now.Mtime == c.Mtime.UnixNano())
	}
	return false
}
