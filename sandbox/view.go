package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"syscall"
)

// The staging area uses the overlayfs upper-dir format, so a child in the
// kernel overlay and in-process writers share one representation:
//   - a character device 0/0 is a whiteout: the lower entry is deleted;
//   - a directory with the xattr user.overlay.opaque="y" hides all of the
//     lower directory of the same name: the directory was replaced.
const (
	xattrOpaque        = "user.overlay.opaque"
	xattrTrustedOpaque = "trusted.overlay.opaque"
)

// layer says which side of the overlay an entry comes from.
type layer uint8

const (
	layerNone layer = iota
	layerUpper
	layerLower
)

// entry is one path as the staged view sees it.
type entry struct {
	layer layer
	abs   string // absolute path of the visible file
	info  fs.FileInfo
	// merged is true for an upper directory through which the lower
	// directory of the same path still shows (no opaque dir above or at it).
	merged bool
	// whiteout is true for a path that does not exist because its staged
	// side is a whiteout: the deletion of a real file.
	whiteout bool
	// realMissing is true when looking the path up found no real file
	// there (lstat: ENOENT or ENOTDIR).
	realMissing bool
}

func (e entry) exists() bool { return e.layer != layerNone }

// deref is *e, or no entry.
func deref(e *entry) entry {
	if e == nil {
		return entry{}
	}
	return *e
}

// real returns the absolute real-side path of a clean relative path.
func (tx *Tx) real(rel string) string { return filepath.Join(tx.ws.root, filepath.FromSlash(rel)) }

// up returns the absolute staging path of a clean relative path.
func (tx *Tx) up(rel string) string { return filepath.Join(tx.upper, filepath.FromSlash(rel)) }

// lookup finds rel in the staged view without following a final symlink.
// Parent symlinks are not followed either: callers resolve first. The
// parents are looked up in the staging area only (a whiteout, a file or
// an opaque folder there decides what shows below); the real side is
// asked for rel alone.
func (tx *Tx) lookup(rel string) (entry, error) {
	if rel == "." {
		fi, err := os.Lstat(tx.ws.root)
		return entry{layer: layerUpper, abs: tx.upper, info: fi, merged: true}, err
	}
	w := walk{tx: tx, lowerVisible: true}
	parts := splitPath(rel)
	p := ""
	for _, part := range parts[:len(parts)-1] {
		p = joinRel(p, part)
		if _, _, err := w.upperOf(p); err != nil {
			return entry{}, err
		}
	}
	return w.next(rel)
}

// resolve follows symlinks in the parents of rel (and in rel itself when
// followLast) inside the staged view, refusing any that lead outside.
func (tx *Tx) resolve(op, rel string, followLast bool) (string, error) {
	rel, _, err := tx.resolveEntry(op, rel, followLast)
	return rel, err
}

// resolveEntry is resolve, with the resolved path's entry when resolving
// looked it up (its last component followed), nil otherwise: a caller
// that needs it looks it up only then.
func (tx *Tx) resolveEntry(op, rel string, followLast bool) (string, *entry, error) {
	for hops := 0; ; hops++ {
		if hops > maxSymlinkHops {
			return "", nil, pathErr(op, rel, ErrSymlinkLoop)
		}
		next, final, changed, err := tx.resolveOnce(op, rel, followLast)
		if err != nil || !changed {
			return next, final, err
		}
		rel = next
	}
}

// resolveOnce replaces the first symlink found along rel with its target
// (changed); when there is none, it returns rel itself with rel's entry
// (its last component followed only when followLast, as lookup gives it
// otherwise).
func (tx *Tx) resolveOnce(op, rel string, followLast bool) (_ string, final *entry, changed bool, _ error) {
	parts := splitPath(rel)
	w := walk{tx: tx, lowerVisible: true}
	p := ""
	for i, part := range parts {
		last := i == len(parts)-1
		p = joinRel(p, part)
		e, err := w.next(p)
		if err != nil {
			return "", nil, false, pathErr(op, rel, err)
		}
		if last && !followLast {
			return rel, &e, false, nil
		}
		if !e.exists() || e.info.Mode()&fs.ModeSymlink == 0 {
			if last {
				return rel, &e, false, nil
			}
			continue
		}
		target, err := os.Readlink(e.abs)
		if err != nil {
			return "", nil, false, pathErr(op, rel, err)
		}
		dest, err := tx.ws.symlinkTarget(p, target)
		if err != nil {
			return "", nil, false, pathErr(op, rel, errors.Unwrap(err))
		}
		rest := path.Join(parts[i+1:]...)
		if rest != "" {
			dest = path.Join(dest, rest)
		}
		if dest == ".." || len(dest) > 2 && dest[:3] == "../" {
			return "", nil, false, pathErr(op, rel, ErrEscape)
		}
		return dest, nil, true, nil
	}
	return rel, nil, false, nil
}

// walk looks up the prefixes of one path in turn, each as lookup would,
// carrying from one prefix to the next what lookup would find again on
// its way from the top: one lstat of each side a prefix (fewer once a
// side has nothing further down), where a lookup of each from the top
// made the path's depth squared.
type walk struct {
	tx           *Tx
	lowerVisible bool // no opaque staged directory above
	dead         bool // a staged whiteout or non-directory above: nothing below exists
	upperGone    bool // the staging area has nothing at the last prefix: nor below it
	realGone     bool // the real side has nothing at the last prefix, or a non-directory: nor below it
}

// next is lookup(p), p the prefix after the one walked before.
func (w *walk) next(p string) (entry, error) {
	if e, decided, err := w.upperOf(p); decided || err != nil {
		return e, err
	}
	return w.lowerOf(p)
}

// upperOf looks p up in the staging area: decided with p's entry when
// that settles it (something staged there, or nothing below a whiteout or
// a file staged above), else the real side says.
func (w *walk) upperOf(p string) (entry, bool, error) {
	if w.dead {
		return entry{}, true, nil
	}
	if w.upperGone {
		return entry{}, false, nil
	}
	fi, err := os.Lstat(w.tx.up(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		w.upperGone = true
		return entry{}, false, nil
	case errors.Is(err, syscall.ENOTDIR):
		w.dead = true
		return entry{}, true, nil
	case err != nil:
		return entry{}, true, err
	case isWhiteout(fi):
		w.dead = true
		return entry{whiteout: true}, true, nil
	}
	opaque := false
	if fi.IsDir() && w.lowerVisible {
		opaque = isOpaque(w.tx.up(p))
	}
	merged := w.lowerVisible && fi.IsDir() && !opaque
	if !fi.IsDir() {
		w.dead = true
	} else if opaque {
		w.lowerVisible = false
	}
	return entry{layer: layerUpper, abs: w.tx.up(p), info: fi, merged: merged}, true, nil
}

// lowerOf is p's entry on the real side, when the staging area has none.
func (w *walk) lowerOf(p string) (entry, error) {
	if !w.lowerVisible {
		return entry{}, nil
	}
	if w.realGone {
		return entry{realMissing: true}, nil
	}
	fi, err := os.Lstat(w.tx.real(p))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		w.realGone = true
		return entry{realMissing: true}, nil
	}
	if err != nil {
		return entry{}, err
	}
	if !fi.IsDir() {
		w.realGone = true
	}
	return entry{layer: layerLower, abs: w.tx.real(p), info: fi}, nil
}

// Lstat describes name in the staged view of the transaction without
// following a final symlink.
func (f *Files) Lstat(name string) (fs.FileInfo, error) {
	return f.statView("lstat", name, false)
}

// Stat describes name in the staged view of the transaction, following
// symlinks that stay inside the workspace.
func (f *Files) Stat(name string) (fs.FileInfo, error) {
	return f.statView("stat", name, true)
}

func (f *Files) statView(op, name string, follow bool) (fs.FileInfo, error) {
	f.tx.mu.Lock()
	defer f.tx.mu.Unlock()
	e, err := f.find(op, name, follow)
	if err != nil {
		return nil, err
	}
	if !e.exists() {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e.info, nil
}

// find cleans, resolves and looks up name. The caller holds tx.mu.
func (f *Files) find(op, name string, follow bool) (entry, error) {
	tx := f.tx
	rel, err := tx.ws.cleanRel(op, name)
	if err != nil {
		return entry{}, err
	}
	rel, final, err := tx.resolveEntry(op, rel, follow)
	if err != nil || final != nil {
		return deref(final), err
	}
	e, err := tx.lookup(rel)
	if err != nil {
		return entry{}, pathErr(op, name, err)
	}
	return e, nil
}

// Open opens name for reading in the staged view of the transaction.
func (f *Files) Open(name string) (*os.File, error) {
	f.tx.mu.Lock()
	defer f.tx.mu.Unlock()
	e, err := f.find("open", name, true)
	if err != nil {
		return nil, err
	}
	if !e.exists() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return os.Open(e.abs)
}

// ReadFile returns the content of name in the staged view of the
// transaction.
func (f *Files) ReadFile(name string) ([]byte, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(file)
}

// ReadDir lists a directory of the staged view of the transaction, sorted
// by name: upper entries, then lower ones that are neither hidden nor
// deleted.
func (f *Files) ReadDir(name string) ([]fs.FileInfo, error) {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, err := tx.ws.cleanRel("readdir", name)
	if err == nil {
		rel, err = tx.resolve("readdir", rel, true)
	}
	if err != nil {
		return nil, err
	}
	return f.readDir(rel)
}

// readDir lists directory rel of the staged view. The caller holds tx.mu.
func (f *Files) readDir(rel string) ([]fs.FileInfo, error) {
	tx := f.tx
	e, err := tx.lookup(rel)
	if err != nil {
		return nil, err
	}
	if !e.exists() || !e.info.IsDir() {
		return nil, pathErr("readdir", rel, syscall.ENOTDIR)
	}
	seen := map[string]bool{}
	var out []fs.FileInfo
	if e.layer == layerUpper {
		out = f.listLayer(rel, tx.up(rel), seen, out)
	}
	if e.layer == layerLower || e.merged {
		if lfi, err := os.Lstat(tx.real(rel)); err == nil && lfi.IsDir() {
			out = f.listLayer(rel, tx.real(rel), seen, out)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// listLayer appends the entries of one layer's directory not yet seen,
// marking whiteouts as seen so that the lower layer cannot show them.
func (f *Files) listLayer(rel, abs string, seen map[string]bool, out []fs.FileInfo) []fs.FileInfo {
	ents, _ := os.ReadDir(abs)
	for _, d := range ents {
		if seen[d.Name()] || f.tx.ws.isState(joinRel(rel, d.Name())) {
			continue
		}
		seen[d.Name()] = true
		fi, err := d.Info()
		if err != nil || isWhiteout(fi) {
			continue
		}
		out = append(out, fi)
	}
	return out
}
