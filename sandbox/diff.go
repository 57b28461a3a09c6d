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

// Diff returns the change set staged so far. It refuses (with an error
// naming the path) anything that could not be committed safely: special
// files, hard links, symlinks leading out of the workspace.
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
	if err := tx.diffDir(".", true, &cs.Changes); err != nil {
		return ChangeSet{}, err
	}
	sort.Slice(cs.Changes, func(i, j int) bool { return cs.Changes[i].Path < cs.Changes[j].Path })
	return cs, nil
}

// diffDir walks one staging directory; lowerOn says the real directory of
// the same path shows through it.
func (tx *Tx) diffDir(rel string, lowerOn bool, out *[]Change) error {
	ents, err := os.ReadDir(tx.up(rel))
	if err != nil {
		return pathErr("diff", rel, err)
	}
	for _, d := range ents {
		p := joinRel(rel, d.Name())
		if tx.ws.isState(p) {
			continue
		}
		fi, err := d.Info()
		if err != nil {
			return pathErr("diff", p, err)
		}
		var lower fs.FileInfo
		if lowerOn {
			lower, _ = os.Lstat(tx.real(p))
		}
		if err := tx.diffEntry(p, fi, lower, out); err != nil {
			return err
		}
	}
	return nil
}

func (tx *Tx) diffEntry(p string, fi, lower fs.FileInfo, out *[]Change) error {
	switch {
	case isWhiteout(fi):
		if lower != nil {
			*out = append(*out, Change{Path: p, Op: OpDelete, IsDir: lower.IsDir()})
			return tx.implied(p, lower, out)
		}
		return nil
	case fi.IsDir():
		return tx.diffUpperDir(p, fi, lower, out)
	case fi.Mode()&fs.ModeSymlink != 0:
		return tx.diffSymlink(p, lower, out)
	case fi.Mode().IsRegular():
		return tx.diffFile(p, fi, lower, out)
	}
	return pathErr("diff", p, ErrSpecialFile)
}

func (tx *Tx) diffUpperDir(p string, fi, lower fs.FileInfo, out *[]Change) error {
	mode := fi.Mode().Perm()
	opaque := isOpaque(tx.up(p))
	switch {
	case lower == nil || !lower.IsDir():
		*out = append(*out, Change{Path: p, Op: OpMkdir, Mode: mode})
	case opaque:
		*out = append(*out, Change{Path: p, Op: OpReplaceDir, Mode: mode})
		if err := tx.implied(p, lower, out); err != nil {
			return err
		}
	case lower.Mode().Perm() != mode:
		*out = append(*out, Change{Path: p, Op: OpChmodDir, Mode: mode})
	}
	return tx.diffDir(p, lower != nil && lower.IsDir() && !opaque, out)
}

func (tx *Tx) diffSymlink(p string, lower fs.FileInfo, out *[]Change) error {
	target, err := os.Readlink(tx.up(p))
	if err != nil {
		return pathErr("diff", p, err)
	}
	if _, err := tx.ws.symlinkTarget(p, target); err != nil {
		return pathErr("diff", p+" -> "+target, errors.Unwrap(err))
	}
	if lower != nil && lower.Mode()&fs.ModeSymlink != 0 {
		if old, _ := os.Readlink(tx.real(p)); old == target {
			return nil
		}
	}
	*out = append(*out, Change{Path: p, Op: OpSymlink, Target: target})
	return tx.implied(p, lower, out)
}

func (tx *Tx) diffFile(p string, fi, lower fs.FileInfo, out *[]Change) error {
	if linkCount(fi) > 1 {
		return pathErr("diff", p, ErrHardLink)
	}
	c := Change{Path: p, Op: OpWrite, Mode: fi.Mode().Perm(), Size: fi.Size(), staged: tx.up(p)}
	if lower != nil && lower.Mode().IsRegular() && lower.Size() == fi.Size() {
		same, err := sameContent(tx.up(p), tx.real(p))
		if err != nil {
			return pathErr("diff", p, err)
		}
		if same && lower.Mode().Perm() == c.Mode {
			return nil // copied up, never changed
		}
		if same {
			c.Op, c.Size, c.staged = OpChmod, 0, ""
		}
	}
	*out = append(*out, c)
	return tx.implied(p, lower, out)
}

// implied lists, as implied deletes, every real path under p that the
// staging area does not hold, when p was a real directory now replaced.
func (tx *Tx) implied(p string, lower fs.FileInfo, out *[]Change) error {
	if lower == nil || !lower.IsDir() {
		return nil
	}
	root := tx.real(p)
	return filepath.WalkDir(root, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if q == root {
			return nil
		}
		rel, _ := filepath.Rel(tx.ws.root, q)
		rel = filepath.ToSlash(rel)
		if tx.ws.isState(rel) {
			return filepath.SkipDir
		}
		if fi, err := os.Lstat(tx.up(rel)); err == nil && !isWhiteout(fi) {
			return nil
		}
		*out = append(*out, Change{Path: rel, Op: OpDelete, IsDir: d.IsDir(), Implied: true})
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
