package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// copyFile copies a regular file's content, mode (perm's permission,
// setuid, setgid and sticky bits), user extended attributes (not
// overlayfs's) and modification time, cloning extents (reflink) where the
// file system can and copying bytes otherwise (copy_file_range, holes
// kept: copyData). It writes through a temporary name so dst is never
// seen half written.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	tmp := dst + ".jbx-tmp"
	// 0600 until the attributes are set: setting them needs write access.
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	if cerr := cloneFile(out, in); cerr != nil {
		err = copyData(out, in, fi)
	}
	if err == nil {
		err = copyXattrs(src, tmp)
	}
	if err == nil {
		err = out.Chmod(modeBits(perm))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(tmp, time.Time{}, fi.ModTime())
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// linkOrCopy hard-links src to dst, or copies when links cannot cross.
func linkOrCopy(src, dst string, perm fs.FileMode) error {
	err := os.Link(src, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	return copyFile(src, dst, perm)
}

// copyTree copies a staging tree (regular files, dirs, symlinks, whiteouts
// and opaque markers) from src to dst, which must not exist. Directories
// get their modification times back once their content is in.
func copyTree(src, dst string) error {
	var dirs []string
	var times []time.Time
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			dirs, times = append(dirs, to), append(times, fi.ModTime())
		}
		return copyNode(p, to, fi)
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = os.Chtimes(dirs[i], time.Time{}, times[i])
	}
	return err
}

// keepTimes returns a function that gives the staging directory dir back
// the modification time it has now: copying an entry up into it is no
// change of the directory, as overlayfs's copy-up restores its parent's
// times too.
func keepTimes(dir string) func() {
	fi, err := os.Lstat(dir)
	if err != nil {
		return func() {}
	}
	return func() { os.Chtimes(dir, time.Time{}, fi.ModTime()) }
}

// copyDirMeta gives the directory to what the directory from (which fi
// describes) has: user extended attributes, mode (setuid, setgid and
// sticky included) and modification time.
func copyDirMeta(from, to string, fi fs.FileInfo) error {
	if err := copyXattrs(from, to); err != nil {
		return err
	}
	if err := os.Chmod(to, modeBits(fi.Mode())); err != nil {
		return err
	}
	return os.Chtimes(to, time.Time{}, fi.ModTime())
}

// copyNode copies one staging node, keeping its kind, mode, user
// extended attributes and modification time (a symlink's is not kept).
func copyNode(from, to string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		if err := os.Mkdir(to, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		if isOpaque(from) {
			if err := setOpaque(to); err != nil {
				return err
			}
		}
		return copyDirMeta(from, to, fi)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case isWhiteout(fi):
		return mkWhiteout(to)
	case fi.Mode().IsRegular():
		return copyFile(from, to, fi.Mode())
	}
	return fmt.Errorf("%w: %s", ErrSpecialFile, from)
}

// removeAll removes a tree, first making directories writable: the kernel
// overlay leaves a mode-000 work directory behind.
func removeAll(p string) error {
	err := os.RemoveAll(p)
	if err == nil {
		return nil
	}
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(q, 0o700)
		}
		return nil
	})
	return os.RemoveAll(p)
}
