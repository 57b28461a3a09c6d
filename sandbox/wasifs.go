package sandbox

import (
	"crypto/rand"
	"io/fs"
	"os"

	xsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

type randReader struct{}

func (randReader) Read(p []byte) (int, error) { return rand.Read(p) }

// OpenFile opens through the overlay: writes on the staged copy, reads on
// whichever layer shows the file, directories as a merged listing.
func (w *wasiFS) OpenFile(path string, flag xsys.Oflag, perm fs.FileMode) (xsys.File, xsys.Errno) {
	name := viewName(path)
	if o := osFlags(flag); o&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		perm = wasiFilePerm() // wazero's fixed 0600 is not the tool's choice
		f, err := w.files.OpenFile(name, o, perm)
		if err != nil {
			return nil, toErrno(err)
		}
		f.Close()
		rel, _, err := w.resolved(name)
		if err != nil {
			return nil, toErrno(err)
		}
		return w.upper.OpenFile(rel, flag&^(xsys.O_CREAT|xsys.O_EXCL|xsys.O_TRUNC), perm)
	}
	rel, e, err := w.resolved(name)
	if err != nil {
		return nil, toErrno(err)
	}
	if !e.exists() {
		return nil, xsys.ENOENT
	}
	if e.info.IsDir() {
		return w.openDir(rel, e)
	}
	if flag&xsys.O_DIRECTORY != 0 {
		return nil, xsys.ENOTDIR
	}
	if e.layer == layerUpper {
		return w.upper.OpenFile(rel, flag, perm)
	}
	return w.lower.OpenFile(rel, flag, perm)
}

// resolved cleans and resolves name (following a final symlink).
func (w *wasiFS) resolved(name string) (string, entry, error) {
	w.tx.mu.Lock()
	defer w.tx.mu.Unlock()
	rel, err := w.tx.ws.cleanRel("open", name)
	if err == nil {
		rel, err = w.tx.resolve("open", rel, true)
	}
	if err != nil {
		return "", entry{}, err
	}
	e, err := w.tx.lookup(rel)
	return rel, e, err
}

func (w *wasiFS) openDir(rel string, e entry) (xsys.File, xsys.Errno) {
	list, err := w.files.ReadDir(rel)
	if err != nil {
		return nil, toErrno(err)
	}
	d := &mergedDir{st: sys.NewStat_t(e.info)}
	for _, fi := range list {
		d.ents = append(d.ents, xsys.Dirent{Name: fi.Name(), Type: fi.Mode().Type(), Ino: sys.NewStat_t(fi).Ino})
	}
	return d, 0
}

// Lstat describes path in the view without following a final symlink.
func (w *wasiFS) Lstat(path string) (sys.Stat_t, xsys.Errno) {
	fi, err := w.files.Lstat(viewName(path))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Stat describes path in the view.
func (w *wasiFS) Stat(path string) (sys.Stat_t, xsys.Errno) {
	fi, err := w.files.Stat(viewName(path))
	if err != nil {
		return sys.Stat_t{}, toErrno(err)
	}
	return sys.NewStat_t(fi), 0
}

// Readlink reads a symlink of the view.
func (w *wasiFS) Readlink(path string) (string, xsys.Errno) {
	s, err := w.files.readlink(viewName(path))
	return s, toErrno(err)
}

// Mkdir stages a directory.
func (w *wasiFS) Mkdir(path string, perm fs.FileMode) xsys.Errno {
	return toErrno(w.files.Mkdir(viewName(path), wasiDirPerm()))
}

// Chmod stages a mode change.
func (w *wasiFS) Chmod(path string, perm fs.FileMode) xsys.Errno {
	return toErrno(w.files.Chmod(viewName(path), perm))
}

// Rename stages a move.
func (w *wasiFS) Rename(from, to string) xsys.Errno {
	return toErrno(w.files.Rename(viewName(from), viewName(to)))
}

// Rmdir stages removing an empty directory.
func (w *wasiFS) Rmdir(path string) xsys.Errno {
	fi, err := w.files.Lstat(viewName(path))
	if err != nil {
		return toErrno(err)
	}
	if !fi.IsDir() {
		return xsys.ENOTDIR
	}
	return toErrno(w.files.Remove(viewName(path)))
}

// Unlink stages removing a file or symlink.
func (w *wasiFS) Unlink(path string) xsys.Errno {
	fi, err := w.files.Lstat(viewName(path))
	if err != nil {
		return toErrno(err)
	}
	if fi.IsDir() {
		return xsys.EISDIR
	}
	return toErrno(w.files.Remove(viewName(path)))
}

// Symlink stages a symlink; targets leading out are refused.
func (w *wasiFS) Symlink(oldPath, linkName string) xsys.Errno {
	return toErrno(w.files.Symlink(oldPath, viewName(linkName)))
}

// Link is refused: the booth stages no hard links.
func (w *wasiFS) Link(string, string) xsys.Errno { return xsys.EPERM }

// Utimens is accepted and ignored: times are not part of a change set.
func (w *wasiFS) Utimens(string, int64, int64) xsys.Errno { return 0 }

// mergedDir is an open directory of the view: a fixed, sorted listing,
// taken at open. It cannot be rewound (Seek is left unimplemented, so a
// guest re-reading one open directory gets ENOSYS; opening it again works).
type mergedDir struct {
	xsys.UnimplementedFile
	st   sys.Stat_t
	ents []xsys.Dirent
	pos  int
}

func (d *mergedDir) IsDir() (bool, xsys.Errno)      { return true, 0 }
func (d *mergedDir) IsAppend() bool                 { return false }
func (d *mergedDir) SetAppend(bool) xsys.Errno      { return xsys.EISDIR }
func (d *mergedDir) Read([]byte) (int, xsys.Errno)  { return 0, xsys.EISDIR }
func (d *mergedDir) Write([]byte) (int, xsys.Errno) { return 0, xsys.EISDIR }
func (d *mergedDir) Stat() (sys.Stat_t, xsys.Errno) { return d.st, 0 }
func (d *mergedDir) Ino() (sys.Inode, xsys.Errno)   { return d.st.Ino, 0 }
func (d *mergedDir) Dev() (uint64, xsys.Errno)      { return d.st.Dev, 0 }
func (d *mergedDir) Sync() xsys.Errno               { return 0 }
func (d *mergedDir) Datasync() xsys.Errno           { return 0 }
func (d *mergedDir) Close() xsys.Errno              { return 0 }
func (d *mergedDir) Pread([]byte, int64) (int, xsys.Errno) {
	return 0, xsys.EISDIR
}
func (d *mergedDir) Pwrite([]byte, int64) (int, xsys.Errno) {
	return 0, xsys.EISDIR
}
func (d *mergedDir) Truncate(int64) xsys.Errno { return xsys.EISDIR }

// Readdir returns up to n more entries (all that remain when n <= 0).
func (d *mergedDir) Readdir(n int) ([]xsys.Dirent, xsys.Errno) {
	rest := d.ents[d.pos:]
	if n > 0 && n < len(rest) {
		rest = rest[:n]
	}
	d.pos += len(rest)
	return rest, 0
}
