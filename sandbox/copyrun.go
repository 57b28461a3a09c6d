package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// copyStamp is what a materialised file looked like right after the copy;
// if it still looks the same, the child did not touch it.
type copyStamp struct {
	ino   uint64
	size  int64
	mtime int64
	mode  fs.FileMode
}

func stampOf(fi fs.FileInfo) copyStamp {
	return copyStamp{ino: inode(fi), size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime().UnixNano()}
}

// execCopy is the fallback: it materialises the staged view in a private
// copy (reflinked where possible), runs the child there, and folds what
// the child changed back into the staging area — the same change set the
// overlay would give.
func (tx *Tx) execCopy(ctx context.Context, o ExecOptions, dir string) (ExecResult, error) {
	root := filepath.Join(tx.dir, "copy")
	removeAll(root)
	defer removeAll(root)
	stamps := map[string]copyStamp{}
	reflinked, err := tx.materialize(root, stamps)
	if err != nil {
		return ExecResult{}, fmt.Errorf("sandbox: copy workspace: %w", err)
	}
	res := ExecResult{Mode: ModeCopy}
	if reflinked {
		res.Mode = ModeReflink
	}
	cmd := exec.CommandContext(ctx, o.Args[0], o.Args[1:]...)
	cmd.Dir = filepath.Join(root, filepath.FromSlash(dir))
	cmd.Env = envOrSelf(o.Env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	if res.ExitCode, err = exitCode(cmd.Run()); err != nil {
		return res, fmt.Errorf("sandbox: exec %s: %w", o.Args[0], err)
	}
	return res, tx.fold(root, ".", stamps)
}

// materialize copies the staged view into root and reports whether files
// were reflinked.
func (tx *Tx) materialize(root string, stamps map[string]copyStamp) (bool, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return false, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return false, err
	}
	reflinked := false
	err := tx.walkView(".", func(rel string, e entry) error {
		to := filepath.Join(root, filepath.FromSlash(rel))
		if e.info.Mode().IsRegular() && !reflinked {
			reflinked = canReflink(e.abs, to)
		}
		if err := copyNode(e.abs, to, e.info); err != nil {
			return err
		}
		if fi, err := os.Lstat(to); err == nil && !fi.IsDir() {
			stamps[rel] = stampOf(fi)
		}
		return nil
	})
	return reflinked, err
}

// walkView calls fn for every entry of the staged view under rel, parents
// before children. The caller holds tx.mu.
func (tx *Tx) walkView(rel string, fn func(rel string, e entry) error) error {
	list, err := tx.readDir(rel)
	if err != nil {
		return err
	}
	for _, fi := range list {
		p := joinRel(rel, fi.Name())
		e, err := tx.lookup(p)
		if err != nil || !e.exists() {
			return err
		}
		if err := fn(p, e); err != nil {
			return err
		}
		if e.info.IsDir() {
			if err := tx.walkView(p, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// canReflink tries one clone into a scratch file beside dst.
func canReflink(src, dst string) bool {
	in, err := os.Open(src)
	if err != nil {
		return false
	}
	defer in.Close()
	probe := dst + ".reflink-probe"
	out, err := os.Create(probe)
	if err != nil {
		return false
	}
	defer os.Remove(probe)
	defer out.Close()
	return cloneFile(out, in) == nil
}

// fold stages, entry by entry, how the copy at root differs from the
// staged view: new and changed entries, then deletions. An entry it
// cannot stage (a fifo, socket or device, a hard link, a path too long,
// one that fails to stage) is refused and kept with the transaction for
// Diff to list; the rest is folded all the same.
func (tx *Tx) fold(root, rel string, stamps map[string]copyStamp) error {
	var refused []Refusal
	err := tx.foldTree(root, rel, stamps, &refused)
	if kerr := tx.keepRefusals(refused); err == nil {
		err = kerr
	}
	return err
}

// foldTree folds one directory of the copy. Only a failure to read the
// top of the copy or the staged view is an error; the rest are refusals.
func (tx *Tx) foldTree(root, rel string, stamps map[string]copyStamp, refused *[]Refusal) error {
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		if rel == "." {
			return err
		}
		*refused = append(*refused, unreadableRefusal(rel, err))
		return nil
	}
	names := map[string]bool{}
	for _, d := range ents {
		p := joinRel(rel, d.Name())
		names[d.Name()] = true
		if tx.ws.isState(p) {
			continue
		}
		if tooLong(filepath.Join(root, filepath.FromSlash(p))) || tooLong(tx.up(p)) || tooLong(tx.real(p)) {
			*refused = append(*refused, longRefusal(p, d.IsDir()))
			continue
		}
		fi, err := d.Info()
		if err == nil {
			err = tx.foldEntry(root, p, fi, stamps, refused)
		}
		if err != nil {
			*refused = append(*refused, stageRefusal(p, err))
		}
	}
	view, err := tx.ReadDir(rel)
	if err != nil {
		if rel == "." {
			return err
		}
		*refused = append(*refused, unreadableRefusal(rel, err))
		return nil
	}
	for _, fi := range view {
		if !names[fi.Name()] {
			if err := tx.RemoveAll(joinRel(rel, fi.Name())); err != nil {
				*refused = append(*refused, stageRefusal(joinRel(rel, fi.Name()), err))
			}
		}
	}
	return nil
}

// stageRefusal is the refusal of an entry the copy holds that could not
// be staged.
func stageRefusal(p string, err error) Refusal {
	r := unreadableRefusal(p, err)
	r.Reason = strings.Replace(r.Reason, "could not read it", "could not stage it", 1)
	return r
}

func (tx *Tx) foldEntry(root, p string, fi fs.FileInfo, stamps map[string]copyStamp, refused *[]Refusal) error {
	abs := filepath.Join(root, filepath.FromSlash(p))
	old, err := tx.Lstat(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	switch {
	case fi.IsDir():
		return tx.foldDir(root, p, fi, old, stamps, refused)
	case fi.Mode()&fs.ModeSymlink != 0:
		// A symlink is data: staged with its target, whatever it points at.
		target, err := os.Readlink(abs)
		if err != nil {
			return err
		}
		if old != nil && old.Mode()&fs.ModeSymlink != 0 {
			if cur, _ := tx.readlink(p); cur == target {
				return nil
			}
		}
		if err := tx.RemoveAll(p); err != nil {
			return err
		}
		return tx.Symlink(target, p)
	case fi.Mode().IsRegular():
		if s, ok := stamps[p]; ok && s == stampOf(fi) {
			return nil // untouched copy
		}
		if n := linkCount(fi); n > 1 {
			// Another name of the same file, maybe outside the workspace:
			// adopting the inode would commit a link to it.
			*refused = append(*refused, hardLinkRefusal(p, n))
			return nil
		}
		return tx.adopt(p, abs, fi, old)
	}
	*refused = append(*refused, refusalFor(p, fi.Mode()))
	return nil
}

func (tx *Tx) foldDir(root, p string, fi, old fs.FileInfo, stamps map[string]copyStamp, refused *[]Refusal) error {
	if old == nil || !old.IsDir() {
		if err := tx.RemoveAll(p); err != nil {
			return err
		}
		if err := tx.Mkdir(p, fi.Mode().Perm()); err != nil {
			return err
		}
	} else if old.Mode().Perm() != fi.Mode().Perm() {
		if err := tx.Chmod(p, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return tx.foldTree(root, p, stamps, refused)
}

// adopt moves a file the child wrote into the staging area at p.
func (tx *Tx) adopt(p, abs string, fi, old fs.FileInfo) error {
	if old != nil && old.IsDir() {
		if err := tx.RemoveAll(p); err != nil {
			return err
		}
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, _, err := tx.prepare("exec", p, false)
	if err != nil {
		return err
	}
	if err := tx.upperParent("exec", rel); err != nil {
		return err
	}
	if err := tx.clearUpper(rel); err != nil {
		return err
	}
	if err := os.Rename(abs, tx.up(rel)); err != nil {
		return copyFile(abs, tx.up(rel), fi.Mode())
	}
	return nil
}

// readlink reads a symlink of the staged view.
func (tx *Tx) readlink(name string) (string, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	e, err := tx.find("readlink", name, false)
	if err != nil || !e.exists() {
		return "", err
	}
	return os.Readlink(e.abs)
}
