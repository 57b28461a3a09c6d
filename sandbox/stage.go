package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// prepare cleans and resolves name for a mutation and records the real
// side's fingerprint. The caller holds tx.mu.
func (f *Files) prepare(op, name string, followLast bool) (string, entry, error) {
	tx := f.tx
	if err := tx.checkOpen(); err != nil {
		return "", entry{}, err
	}
	rel, err := tx.ws.cleanFile(op, name)
	var final *entry
	if err == nil {
		rel, final, err = tx.resolveEntry(op, rel, followLast)
	}
	if err != nil {
		return "", entry{}, err
	}
	if rel == "." || tx.ws.isState(rel) {
		return "", entry{}, pathErr(op, name, ErrInvalidPath)
	}
	if tx.ws.inForeignState(rel) {
		return "", entry{}, pathErr(op, name, ErrForeignState)
	}
	e := deref(final)
	if final == nil {
		e, err = tx.lookup(rel)
	}
	if err == nil {
		err = tx.noteBase(rel, e)
	}
	if err != nil {
		return "", entry{}, pathErr(op, name, err)
	}
	return rel, e, nil
}

// upperParent makes sure rel's parent exists as a directory in the
// staging area, copying directory modes, user extended attributes and
// times from the view, as overlayfs's copy-up does.
func (f *Files) upperParent(op, rel string) error {
	tx := f.tx
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	if fi, err := os.Lstat(tx.up(dir)); err == nil && fi.IsDir() {
		return nil
	}
	if err := f.upperParent(op, dir); err != nil {
		return err
	}
	e, err := tx.lookup(dir)
	if err != nil {
		return pathErr(op, rel, err)
	}
	if !e.exists() {
		return pathErr(op, rel, fs.ErrNotExist)
	}
	if !e.info.IsDir() {
		return pathErr(op, rel, syscall.ENOTDIR)
	}
	restore := keepTimes(tx.up(path.Dir(dir)))
	defer restore()
	if err := os.Mkdir(tx.up(dir), e.info.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return pathErr(op, rel, err)
	}
	if err := copyDirMeta(e.abs, tx.up(dir), e.info); err != nil {
		return pathErr(op, rel, err)
	}
	return nil
}

// hasUserXattrs reports whether p has user extended attributes (other
// than overlayfs's).
func hasUserXattrs(p string) bool {
	attrs, _ := userXattrs(p)
	return len(attrs) > 0
}

// clearUpper removes whatever the staging area holds at rel.
func (f *Files) clearUpper(rel string) error {
	err := removeAll(f.tx.up(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// copyUp brings a lower file or symlink into the staging area unchanged
// (mode, user extended attributes and mtime included), so that it can be
// modified there. Directories get an upper directory. The parent's times
// are kept: a copy-up is no change of it.
func (f *Files) copyUp(op, rel string, e entry) error {
	tx := f.tx
	if e.layer != layerLower {
		return nil
	}
	if err := f.upperParent(op, rel); err != nil {
		return err
	}
	defer keepTimes(tx.up(path.Dir(rel)))()
	if e.info.IsDir() {
		if err := os.Mkdir(tx.up(rel), e.info.Mode().Perm()|0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return pathErr(op, rel, err)
		}
		if err := copyDirMeta(e.abs, tx.up(rel), e.info); err != nil {
			return pathErr(op, rel, err)
		}
		return nil
	}
	if !e.info.Mode().IsRegular() && e.info.Mode()&fs.ModeSymlink == 0 {
		return pathErr(op, rel, ErrSpecialFile)
	}
	if err := copyNode(e.abs, tx.up(rel), e.info); err != nil {
		return pathErr(op, rel, err)
	}
	return nil
}

// WriteFile stages data as the new content of name in the staged view of
// the transaction, creating it with perm if it does not exist, like
// os.WriteFile.
func (f *Files) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return f.WriteFileIf(name, data, perm, nil)
}

// RealFile is the real side of a path as a staging operation found it
// (an lstat: a final symlink is not followed).
type RealFile struct {
	Exists bool
	Info   fs.FileInfo // when Exists
}

// WriteFileIf is WriteFile once check, when not nil, accepts the real
// side of name: a caller's check that the real file is as its client
// last saw it. The write looks the real file up anyway, on its way to
// the staged copy; check is given what it found, or nil when it did not
// look there (something is staged at name already, or a symlink led
// elsewhere): the caller looks itself. An error of check is returned as
// it is, with nothing staged.
func (f *Files) WriteFileIf(name string, data []byte, perm fs.FileMode, check func(*RealFile) error) error {
	// The staged copy is written through its descriptor alone: an
	// *os.File would register it with the poller first (four fcntl and
	// an epoll_ctl on Linux), a third of a small staged write's calls.
	return f.openStaged(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm, check, func(p string, flag int, perm fs.FileMode) error {
		return writeNoPoll(p, flag, perm, data)
	})
}

// OpenFile opens name in the staged view of the transaction with
// os.OpenFile flags. Opening for writing copies a lower file up first
// (unless O_TRUNC makes that pointless); the returned file is the staged
// copy.
func (f *Files) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) == 0 {
		return f.Open(name)
	}
	var file *os.File
	err := f.openStaged(name, flag, perm, nil, func(p string, flag int, perm fs.FileMode) (err error) {
		file, err = os.OpenFile(p, flag, perm)
		return err
	})
	return file, err
}

// openStaged prepares the staged copy of name for writing with os.OpenFile
// flags (copied up first unless O_TRUNC makes that pointless) and opens it
// with open, under the transaction's lock, with the flags and mode to use;
// check (WriteFileIf) first, when given.
func (f *Files) openStaged(name string, flag int, perm fs.FileMode, check func(*RealFile) error, open func(string, int, fs.FileMode) error) error {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, e, err := f.prepare("write", name, true)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(realSide(tx, name, rel, e)); err != nil {
			return err
		}
	}
	switch {
	case e.exists() && e.info.IsDir():
		return pathErr("write", name, syscall.EISDIR)
	case e.exists() && flag&os.O_EXCL != 0:
		return pathErr("write", name, fs.ErrExist)
	case !e.exists() && flag&os.O_CREATE == 0:
		return pathErr("write", name, fs.ErrNotExist)
	}
	if err := f.upperParent("write", rel); err != nil {
		return err
	}
	// A real file with user extended attributes is copied up even when
	// it is truncated: they stay, as on the real file truncated in place.
	if e.layer == layerLower && (flag&os.O_TRUNC == 0 || hasUserXattrs(e.abs)) {
		if err := f.copyUp("write", rel, e); err != nil {
			return err
		}
	} else if e.layer == layerLower {
		// Truncating a real file makes no new name in its directory:
		// the staged copy leaves the directory's time as it was.
		perm = e.info.Mode().Perm()
		defer keepTimes(tx.up(path.Dir(rel)))()
	}
	if e.whiteout {
		os.Remove(tx.up(rel))
	}
	return open(tx.up(rel), flag|os.O_CREATE|oNoFollow, perm)
}

// realSide is what the lookup of rel (name resolved) found on the real
// side, when it looked there for name itself: nil otherwise.
func realSide(tx *Tx, name, rel string, e entry) *RealFile {
	if clean, err := tx.ws.cleanFile("write", name); err != nil || clean != rel {
		return nil // a symlink on the way: rel is another path than name
	}
	switch {
	case e.realMissing:
		return &RealFile{}
	case e.layer == layerLower:
		return &RealFile{Exists: true, Info: e.info}
	}
	return nil
}

// Remove stages, in the staged view of the transaction, the removal of a
// file, symlink or empty directory.
func (f *Files) Remove(name string) error {
	f.tx.mu.Lock()
	defer f.tx.mu.Unlock()
	return f.remove("remove", name, false)
}

// RemoveAll stages, in the staged view of the transaction, the removal of
// name and everything under it. Like os.RemoveAll it succeeds when name
// does not exist.
func (f *Files) RemoveAll(name string) error {
	f.tx.mu.Lock()
	defer f.tx.mu.Unlock()
	return f.remove("removeall", name, true)
}

func (f *Files) remove(op, name string, all bool) error {
	rel, e, err := f.prepare(op, name, false)
	if err != nil {
		return err
	}
	if !e.exists() {
		if all {
			return nil
		}
		return pathErr(op, name, fs.ErrNotExist)
	}
	if e.info.IsDir() && !all {
		if list, err := f.readDir(rel); err != nil || len(list) > 0 {
			return pathErr(op, name, syscall.ENOTEMPTY)
		}
	}
	return f.whiteout(op, rel)
}

// whiteout deletes rel from the view: it drops any upper entry and, when
// the lower side still has something there, leaves a whiteout.
func (f *Files) whiteout(op, rel string) error {
	tx := f.tx
	if err := f.clearUpper(rel); err != nil {
		return pathErr(op, rel, err)
	}
	e, err := tx.lookup(rel)
	if err != nil || !e.exists() {
		return err
	}
	if err := f.upperParent(op, rel); err != nil {
		return err
	}
	if err := mkWhiteout(tx.up(rel)); err != nil {
		return pathErr(op, rel, err)
	}
	return nil
}

// Mkdir stages a new directory in the staged view of the transaction. A
// directory made where a deleted one was is opaque: none of the old
// content shows through.
func (f *Files) Mkdir(name string, perm fs.FileMode) error {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, e, err := f.prepare("mkdir", name, false)
	if err != nil {
		return err
	}
	if e.exists() {
		return pathErr("mkdir", name, fs.ErrExist)
	}
	if err := f.upperParent("mkdir", rel); err != nil {
		return err
	}
	wasWhiteout := false
	if fi, err := os.Lstat(tx.up(rel)); err == nil && isWhiteout(fi) {
		wasWhiteout = os.Remove(tx.up(rel)) == nil
	}
	if err := os.Mkdir(tx.up(rel), perm.Perm()); err != nil {
		return pathErr("mkdir", name, err)
	}
	if special := perm & (fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky); special != 0 {
		// mkdir applies the umask but may drop these: add them as chmod would.
		if fi, err := os.Lstat(tx.up(rel)); err == nil {
			os.Chmod(tx.up(rel), modeBits(fi.Mode())|special)
		}
	}
	if wasWhiteout {
		return setOpaque(tx.up(rel))
	}
	return nil
}

// MkdirAll stages name and any missing parents in the staged view of the
// transaction.
func (f *Files) MkdirAll(name string, perm fs.FileMode) error {
	if fi, err := f.Stat(name); err == nil {
		if fi.IsDir() {
			return nil
		}
		return pathErr("mkdir", name, syscall.ENOTDIR)
	}
	if dir := path.Dir(name); dir != "." && dir != "/" {
		if err := f.MkdirAll(dir, perm); err != nil {
			return err
		}
	}
	err := f.Mkdir(name, perm)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	return err
}

// Symlink stages, in the staged view of the transaction, a symlink at
// name pointing at target. A symlink is data: the target is kept as
// given, whatever it points at (an absolute path, "..", nothing), and
// Commit writes the link itself, never following it. Only name must stay
// inside the workspace. Staging through the link later (a write to
// name/x) follows it within the staged view, and is refused if it leads
// out.
func (f *Files) Symlink(target, name string) error {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, e, err := f.prepare("symlink", name, false)
	if err != nil {
		return err
	}
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return pathErr("symlink", name+" -> "+target, ErrInvalidPath)
	}
	if e.exists() {
		return pathErr("symlink", name, fs.ErrExist)
	}
	if err := f.upperParent("symlink", rel); err != nil {
		return err
	}
	os.Remove(tx.up(rel)) // a whiteout, if any
	return os.Symlink(target, tx.up(rel))
}

// Chmod stages a permission change of name in the staged view of the
// transaction.
func (f *Files) Chmod(name string, mode fs.FileMode) error {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, e, err := f.prepare("chmod", name, true)
	if err != nil {
		return err
	}
	if !e.exists() {
		return pathErr("chmod", name, fs.ErrNotExist)
	}
	if err := f.copyUp("chmod", rel, e); err != nil {
		return err
	}
	return os.Chmod(tx.up(rel), modeBits(mode))
}
