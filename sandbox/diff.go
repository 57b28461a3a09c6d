package sandbox

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Diff returns the change set staged so far. Whatever cannot be
// committed safely (a fifo, socket or device, a hard-linked file, a path
// over PATH_MAX, an entry it cannot read) is listed in ChangeSet.Refused
// with its reason, and the rest of the change set is returned whole. A
// symlink is data: its target is recorded whatever it points at.
func (tx *Tx) Diff() (ChangeSet, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return ChangeSet{}, err
	}
	return tx.diff()
}

func (tx *Tx) diff() (ChangeSet, error) {
	cs := ChangeSet{TxID: tx.meta.ID}
	if _, err := os.Lstat(tx.upper); err != nil {
		return ChangeSet{}, pathErr("diff", ".", err)
	}
	tx.diffDir(".", true, &cs)
	kept, err := tx.keptRefusals()
	if err != nil {
		return ChangeSet{}, err
	}
	cs.Refused = sortRefusals(append(cs.Refused, kept...))
	sort.Slice(cs.Changes, func(i, j int) bool { return cs.Changes[i].Path < cs.Changes[j].Path })
	return cs, nil
}

// diffDir walks one staging directory; lowerOn says the real directory of
// the same path shows through it. What it cannot read it refuses.
func (tx *Tx) diffDir(rel string, lowerOn bool, cs *ChangeSet) {
	ents, err := os.ReadDir(tx.up(rel))
	if err != nil {
		cs.Refused = append(cs.Refused, unreadableRefusal(rel, err))
		return
	}
	for _, d := range ents {
		p := joinRel(rel, d.Name())
		if tx.ws.isState(p) {
			continue
		}
		if tooLong(tx.up(p)) || tooLong(tx.real(p)) {
			cs.Refused = append(cs.Refused, longRefusal(p, d.IsDir()))
			continue
		}
		fi, err := d.Info()
		if err != nil {
			cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
			continue
		}
		var lower fs.FileInfo
		if lowerOn {
			lower, _ = os.Lstat(tx.real(p))
		}
		tx.diffEntry(p, fi, lower, cs)
	}
}

func (tx *Tx) diffEntry(p string, fi, lower fs.FileInfo, cs *ChangeSet) {
	switch {
	case isWhiteout(fi):
		if lower != nil {
			cs.Changes = append(cs.Changes, Change{Path: p, Op: OpDelete, IsDir: lower.IsDir()})
			tx.implied(p, lower, cs)
		}
	case fi.IsDir():
		tx.diffUpperDir(p, fi, lower, cs)
	case fi.Mode()&fs.ModeSymlink != 0:
		tx.diffSymlink(p, lower, cs)
	case fi.Mode().IsRegular():
		tx.diffFile(p, fi, lower, cs)
	default:
		cs.Refused = append(cs.Refused, refusalFor(p, fi.Mode()))
	}
}

func (tx *Tx) diffUpperDir(p string, fi, lower fs.FileInfo, cs *ChangeSet) {
	mode := fi.Mode().Perm()
	opaque := isOpaque(tx.up(p))
	switch {
	case lower == nil || !lower.IsDir():
		cs.Changes = append(cs.Changes, Change{Path: p, Op: OpMkdir, Mode: mode})
	case opaque:
		cs.Changes = append(cs.Changes, Change{Path: p, Op: OpReplaceDir, Mode: mode})
		tx.implied(p, lower, cs)
	case lower.Mode().Perm() != mode:
		cs.Changes = append(cs.Changes, Change{Path: p, Op: OpChmodDir, Mode: mode})
	}
	tx.diffDir(p, lower != nil && lower.IsDir() && !opaque, cs)
}

// diffSymlink records a staged symlink as data: its target, whatever it
// points at (an absolute path, "..", nothing). Commit writes the link
// itself and never follows it.
func (tx *Tx) diffSymlink(p string, lower fs.FileInfo, cs *ChangeSet) {
	target, err := os.Readlink(tx.up(p))
	if err != nil {
		cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
		return
	}
	if lower != nil && lower.Mode()&fs.ModeSymlink != 0 {
		if old, _ := os.Readlink(tx.real(p)); old == target {
			return
		}
	}
	cs.Changes = append(cs.Changes, Change{Path: p, Op: OpSymlink, Target: target})
	tx.implied(p, lower, cs)
}

// diffFile records a staged regular file. One with more than one name is
// refused unless it is the real file copied up unchanged: a hard link
// could share its inode with a file anywhere on the file system.
func (tx *Tx) diffFile(p string, fi, lower fs.FileInfo, cs *ChangeSet) {
	c := Change{Path: p, Op: OpWrite, Mode: fi.Mode().Perm(), Size: fi.Size(), staged: tx.up(p)}
	if lower != nil && lower.Mode().IsRegular() && lower.Size() == fi.Size() {
		same, err := sameContent(tx.up(p), tx.real(p))
		if err != nil {
			cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
			return
		}
		if same && lower.Mode().Perm() == c.Mode {
			return // copied up, never changed
		}
		if same {
			c.Op, c.Size, c.staged = OpChmod, 0, ""
		}
	}
	if n := linkCount(fi); n > 1 {
		cs.Refused = append(cs.Refused, hardLinkRefusal(p, n))
		return
	}
	cs.Changes = append(cs.Changes, c)
	tx.implied(p, lower, cs)
}

// implied lists, as implied deletes, every real path under p that the
// staging area does not hold, when p was a real directory now replaced.
// A real directory it cannot read is listed, and not what it holds.
func (tx *Tx) implied(p string, lower fs.FileInfo, cs *ChangeSet) {
	if lower == nil || !lower.IsDir() {
		return
	}
	root := tx.real(p)
	filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		if err != nil || q == root {
			return nil // an unreadable directory: listed already, its content cannot be
		}
		rel, _ := filepath.Rel(tx.ws.root, q)
		rel = filepath.ToSlash(rel)
		if tx.ws.isState(rel) {
			return filepath.SkipDir
		}
		if fi, err := os.Lstat(tx.up(rel)); err == nil && !isWhiteout(fi) {
			return nil
		}
		cs.Changes = append(cs.Changes, Change{Path: rel, Op: OpDelete, IsDir: d.IsDir(), Implied: true})
		return nil
	})
}

// sameContent compares two files byte for byte.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return errors.Is(ea, io.EOF) || errors.Is(ea, io.ErrUnexpectedEOF), nil
		}
	}
}
