package sandbox

import (
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// Rename stages, in the staged view of the transaction, moving oldname
// to newname. Like overlayfs without redirects, a directory is moved by
// copying its staged view and deleting the old path; the change set shows
// the writes and the deletes.
func (f *Files) Rename(oldname, newname string) error {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	from, e, err := f.prepare("rename", oldname, false)
	if err != nil {
		return err
	}
	to, ne, err := f.prepare("rename", newname, false)
	if err != nil {
		return err
	}
	if err := renameCheck(from, to, e, ne); err != nil {
		return pathErr("rename", oldname+" -> "+newname, err)
	}
	if from == to {
		return nil
	}
	if err := f.placeAt(to, ne); err != nil {
		return err
	}
	if err := f.moveView(from, to, e); err != nil {
		return pathErr("rename", oldname, err)
	}
	return f.whiteout("rename", from)
}

func renameCheck(from, to string, e, ne entry) error {
	switch {
	case !e.exists():
		return fs.ErrNotExist
	case strings.HasPrefix(to, from+"/"):
		return syscall.EINVAL
	case !ne.exists():
		return nil
	case ne.info.IsDir() && !e.info.IsDir():
		return syscall.EISDIR
	case !ne.info.IsDir() && e.info.IsDir():
		return syscall.ENOTDIR
	}
	return nil
}

// placeAt clears the destination of a rename in the staging area.
func (f *Files) placeAt(to string, ne entry) error {
	if ne.exists() && ne.info.IsDir() {
		if list, err := f.readDir(to); err != nil || len(list) > 0 {
			return pathErr("rename", to, syscall.ENOTEMPTY)
		}
	}
	if err := f.clearUpper(to); err != nil {
		return err
	}
	return f.upperParent("rename", to)
}

// moveView copies the staged view of from to the upper path of to.
func (f *Files) moveView(from, to string, e entry) error {
	tx := f.tx
	if !e.info.IsDir() {
		if e.layer == layerUpper {
			return os.Rename(e.abs, tx.up(to))
		}
		return copyNode(e.abs, tx.up(to), e.info)
	}
	if err := os.Mkdir(tx.up(to), e.info.Mode().Perm()|0o700); err != nil {
		return err
	}
	if lower, err := os.Lstat(tx.real(to)); err == nil && lower != nil {
		if err := setOpaque(tx.up(to)); err != nil {
			return err
		}
	}
	err := f.walkView(from, func(rel string, ce entry) error {
		dst := tx.up(to + strings.TrimPrefix(rel, from))
		return copyNode(ce.abs, dst, ce.info)
	})
	if err != nil {
		return err
	}
	return os.Chmod(tx.up(to), e.info.Mode().Perm())
}
