package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// copyStamp is what a materialised file looked like right after the copy;
// if it still looks the same, the child did not touch it. The copy keeps
// the real file's mtime (as cp -p), so the change time tells a write, a
// chmod or an xattr change that kept the size and mtime.
type copyStamp struct {
	ino   uint64
	size  int64
	mtime int64
	ctime int64
	mode  fs.FileMode
}

func stampOf(fi fs.FileInfo) copyStamp {
	return copyStamp{ino: inode(fi), size: fi.Size(), mode: fi.Mode(), mtime: fi.ModTime().UnixNano(), ctime: ctimeOf(fi)}
}

// snapEntry is one entry of the staged view as it was when the copy was
// made: the snapshot the fold compares the copy against after the run.
type snapEntry struct {
	mode   fs.FileMode // type and permission bits in the view
	stamp  copyStamp   // a regular file: its copy right after copying
	target string      // a symlink: its target
	// real is the real file as the copy was made, when the view showed
	// the real file (not a staged one): the base a commit compares with.
	real    fingerprint
	hasReal bool
	// skipped is a fifo, socket or device (or a file the child must not
	// change): not copied, and never deleted by the fold.
	skipped bool
}

// copyRun is one child run in a copy of the staged view (see copyplace.go
// for where the copy lives).
type copyRun struct {
	tx      *Tx
	files   *Files          // the staged view the fold stages into
	place   string          // the run's private folder, outside the workspace
	root    string          // the copy: place/<workspace name>
	lock    *os.File        // held until the place is removed
	protect map[string]bool // files the child must not change (the tape)
	// holders are the directories that hold the booth's state or a
	// protected file: the fold never deletes or replaces them whole.
	holders map[string]bool
	snap    map[string]*snapEntry
	kids    map[string][]string // the snapshot's names in each directory
	made    map[string]bool     // directories the fold found or made in the view
	// clone is whether reflinks work here: 0 untried, 1 yes, -1 no.
	clone     int8
	reflinked bool
	// copyPaths are the files the agent wrote that still hold the copy's
	// path (copyrelocate.go).
	copyPaths []string
	rootMode  fs.FileMode // the copy's top as made
}

// execCopy is copy mode, asked for by name: it materialises the staged
// view in a private copy outside the workspace (reflinked where possible),
// calls starting with the mode it got, runs the child, unconfined, there and folds what the child changed, compared with the copy as it
// was made, back into the staging area: the same change set the overlay
// would give. The copy is removed before it returns.
func execCopy(ctx context.Context, tx *Tx, o ExecOptions, dir string, starting func(Mode)) (ExecResult, error) {
	res := ExecResult{Mode: ModeCopy, ExitCode: -1}
	r, err := newCopyRun(tx, o.Protect)
	if err != nil {
		return res, fmt.Errorf("sandbox: copy workspace: %w", err)
	}
	defer r.close()
	if err := r.materialize(); err != nil {
		return res, fmt.Errorf("sandbox: copy workspace: %w", err)
	}
	if r.reflinked {
		res.Mode = ModeReflink
	}
	wd := filepath.Join(r.root, filepath.FromSlash(dir))
	cmd := copyCommand(ctx, o.Args, withPWD(envOrSelf(o.Env), wd))
	cmd.Dir = wd
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	starting(res.Mode)
	err = cmd.Start()
	if err == nil {
		// The child leads a session of its own (copyCommand): no
		// terminal signal reaches it but what is passed on here.
		stop := forwardSignals(cmd.Process, o.Signals, nil)
		var view *os.Root
		if o.View != nil {
			if view, _ = os.OpenRoot(r.root); view != nil {
				o.View(view)
			}
		}
		err = cmd.Wait()
		stop()
		if view != nil {
			o.View(nil)
			view.Close()
		}
	}
	if res.ExitCode, res.Signal, err = exitStatus(err); err != nil {
		return res, fmt.Errorf("%w in %s mode: %s: %w", ErrNotStarted, res.Mode, o.Args[0], err)
	}
	err = r.fold()
	res.CopyPaths = r.copyPaths
	return res, err
}

// withPWD sets PWD to dir: the child is not where jukebox is.
func withPWD(env []string, dir string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "PWD=") })
	return append(out, "PWD="+dir)
}

// newCopyRun makes and locks the run's folder.
func newCopyRun(tx *Tx, protect []string) (*copyRun, error) {
	r := &copyRun{tx: tx, files: tx.Files(), protect: map[string]bool{}, holders: map[string]bool{}, snap: map[string]*snapEntry{},
		kids: map[string][]string{}, made: map[string]bool{}}
	for _, p := range protect {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			p = filepath.Join(dir, filepath.Base(p))
		}
		if rel, err := filepath.Rel(tx.ws.root, p); err == nil && filepath.IsLocal(rel) {
			r.protect[filepath.ToSlash(rel)] = true
			r.hold(filepath.ToSlash(rel))
		}
	}
	if tx.ws.stateRel != "" {
		r.hold(tx.ws.stateRel)
	}
	places := copyPlaces(tx.ws, tx.dir, tx.meta.ID)
	if len(places) == 0 {
		return nil, errors.New("no folder outside the workspace to copy it to")
	}
	var err error
	for _, p := range places {
		if r.lock, err = makePlace(p); err == nil {
			r.place = p.dir
			r.root = filepath.Join(p.dir, filepath.Base(tx.ws.root))
			return r, nil
		}
		err = placeErr(p, err)
		if !unwritable(err) {
			break
		}
	}
	return nil, err
}

// hold marks the directories above rel as holders.
func (r *copyRun) hold(rel string) {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		r.holders[d] = true
	}
}

// close removes the copy, then lets go of its folder.
func (r *copyRun) close() {
	removeAll(r.place)
	r.lock.Close()
}

// path is the copy's path for a workspace path.
func (r *copyRun) path(rel string) string { return filepath.Join(r.root, filepath.FromSlash(rel)) }

// dirMode is a copied directory's mode, given once its content is in.
type dirMode struct {
	rel  string
	perm fs.FileMode
}

// materialize copies the staged view into the copy and takes the
// snapshot. Fifos, sockets and devices are left out, and so are the
// files the child must not change (Protect). It copies one file at a
// time: with several at once (tried with 2 to 8 workers), creating files
// in the same directories contended and the copy took longer.
func (r *copyRun) materialize() error {
	tx := r.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	top, err := tx.lookup(".")
	if err != nil {
		return err
	}
	if err := os.Mkdir(r.root, 0o700); err != nil {
		return err
	}
	r.rootMode = modeBits(top.info.Mode())
	dirs := []dirMode{{".", r.rootMode}}
	if err := r.copyDir(".", top, &dirs); err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- { // children before parents
		if err := os.Chmod(r.path(dirs[i].rel), dirs[i].perm); err != nil {
			return copyErr(dirs[i].rel, err)
		}
	}
	return nil
}

// copyDir copies the children of directory rel (whose view entry is d).
// Directories are made writable by their owner, and each gets its mode
// in dirs, to be given once the copy is in, as cp does, so that a
// read-only directory can be filled.
func (r *copyRun) copyDir(rel string, d entry, dirs *[]dirMode) error {
	ents, err := r.files.viewDir(rel, d)
	if err != nil {
		return copyErr(rel, err)
	}
	names := make([]string, 0, len(ents))
	for _, ve := range ents {
		p, e := joinRel(rel, ve.name), ve.e
		mode := e.info.Mode()
		s := &snapEntry{mode: mode.Type() | modeBits(mode)}
		if e.layer == layerLower {
			s.real, s.hasReal = fingerprintOf(p, e.info)
			if !s.hasReal {
				if s.real, err = takeFingerprint(e.abs, p); err != nil {
					return copyErr(p, err)
				}
				s.hasReal = true
			}
		}
		to := r.path(p)
		switch {
		case r.protect[p]:
			s.skipped = true
		case mode.IsDir():
			if err := os.Mkdir(to, 0o700); err != nil {
				return copyErr(p, err)
			}
			*dirs = append(*dirs, dirMode{p, modeBits(mode)})
			if err := r.copyDir(p, e, dirs); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			if s.target, err = os.Readlink(e.abs); err == nil {
				err = os.Symlink(s.target, to)
			}
			if err != nil {
				return copyErr(p, err)
			}
			s.stamp.mtime = r.linkTime(to, e.info)
		case mode.IsRegular():
			// Reflinks are tried on the first file; where they fail, not again.
			stamp, cloned, err := copyRegular(e.abs, to, e.info, r.clone >= 0)
			if errors.Is(err, fs.ErrPermission) && locked(e.info) {
				stamp, cloned, err = r.copyLocked(p, e, to, s)
			}
			if err != nil {
				return copyErr(p, err)
			}
			s.stamp = stamp
			r.reflinked = r.reflinked || cloned
			if r.clone == 0 && !cloned {
				r.clone = -1
			} else if cloned {
				r.clone = 1
			}
		default:
			s.skipped = true // a fifo, socket or device: not copied
		}
		r.snap[p] = s
		names = append(names, ve.name)
	}
	r.kids[rel] = names
	return nil
}

// copyErr names the workspace path, not the copy's or the real one.
func copyErr(rel string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return pathErr("copy", rel, err)
}

// viewEntry is one child of a directory of the staged view.
type viewEntry struct {
	name string
	e    entry
}

// viewDir lists directory rel of the staged view, whose own entry is d,
// as readDir does, with each child's entry (its layer, and whether the
// real directory shows through it), so that a walk needs no lookup per
// entry. The caller holds tx.mu.
func (f *Files) viewDir(rel string, d entry) ([]viewEntry, error) {
	tx := f.tx
	seen := map[string]bool{}
	var out []viewEntry
	list := func(abs string, l layer) error {
		ents, err := os.ReadDir(abs)
		if err != nil {
			return err
		}
		for _, de := range ents {
			p := joinRel(rel, de.Name())
			if seen[de.Name()] || tx.ws.isState(p) {
				continue
			}
			seen[de.Name()] = true
			fi, err := de.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone since it was listed
			} else if err != nil {
				return err
			}
			if l == layerUpper && isWhiteout(fi) {
				continue
			}
			e := entry{layer: l, abs: filepath.Join(abs, de.Name()), info: fi}
			if l == layerUpper {
				e.merged = d.merged && fi.IsDir() && !isOpaque(e.abs)
			}
			out = append(out, viewEntry{de.Name(), e})
		}
		return nil
	}
	if d.layer == layerUpper {
		if err := list(tx.up(rel), layerUpper); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if d.layer == layerLower || d.merged {
		if lfi, err := os.Lstat(tx.real(rel)); err == nil && lfi.IsDir() {
			if err := list(tx.real(rel), layerLower); err != nil {
				return nil, err
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// walkView calls fn for every entry of the staged view under rel, parents
// before children. The caller holds tx.mu.
func (f *Files) walkView(rel string, fn func(rel string, e entry) error) error {
	tx := f.tx
	list, err := f.readDir(rel)
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
			if err := f.walkView(p, fn); err != nil {
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

// fold stages, entry by entry, how the copy differs from the snapshot
// taken when it was made: new and changed entries, then what the child
// removed. The snapshot, not the view as it is now, is the reference: a
// file the user made or edited in the real workspace during the run is
// left as it is (or, if the child changed it too, a conflict at commit),
// never deleted. An entry it cannot stage (a fifo, socket or device, a
// hard link, a path too long, one that fails to stage) is refused and
// kept with the transaction for Diff to list; the rest is folded all the
// same.
func (r *copyRun) fold() error {
	var refused []Refusal
	err := r.foldDir(".", &refused)
	if err == nil {
		err = r.foldRoot()
	}
	if kerr := r.tx.keepRefusals(refused); err == nil {
		err = kerr
	}
	return err
}

// foldDir folds one directory of the copy. Only a failure to read the
// top of the copy is an error; the rest are refusals.
func (r *copyRun) foldDir(rel string, refused *[]Refusal) error {
	tx := r.tx
	ents, err := os.ReadDir(r.path(rel))
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
		if tx.ws.isState(p) || r.protect[p] {
			continue
		}
		if tx.ws.foreignState(p) {
			r.foldForeignState(p, refused)
			continue
		}
		if tooLong(r.path(p)) || tooLong(tx.up(p)) || tooLong(tx.real(p)) {
			*refused = append(*refused, longRefusal(p, d.IsDir()))
			continue
		}
		fi, err := d.Info()
		if err == nil {
			err = r.foldEntry(p, fi, refused)
		}
		if err != nil {
			*refused = append(*refused, stageRefusal(p, err))
		}
	}
	for _, name := range r.kids[rel] {
		if !names[name] {
			r.remove(joinRel(rel, name), refused)
		}
	}
	return nil
}

// remove stages the removal of the snapshot's entry p, which the child
// removed. A directory holding the booth's state or a protected file
// loses only the rest of what it held.
func (r *copyRun) remove(p string, refused *[]Refusal) {
	switch {
	case r.snap[p].skipped:
	case r.tx.ws.foreignState(p):
		*refused = append(*refused, foreignStateRefusal(p))
	case r.holders[p]:
		for _, name := range r.kids[p] {
			r.remove(joinRel(p, name), refused)
		}
	default:
		if err := r.stage(p, func() error { return r.files.RemoveAll(p) }); err != nil {
			*refused = append(*refused, stageRefusal(p, err))
		}
	}
}

// foldForeignState refuses another workspace's jukebox state folder at p
// when the child changed anything in it (workspace.foreignState): nothing
// of it is staged.
func (r *copyRun) foldForeignState(p string, refused *[]Refusal) {
	seen := map[string]bool{}
	changed := false
	filepath.WalkDir(r.path(p), func(abs string, d fs.DirEntry, err error) error {
		if err != nil || changed {
			changed = true
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(r.root, abs)
		q := filepath.ToSlash(rel)
		seen[q] = true
		fi, err := d.Info()
		s := r.snap[q]
		switch {
		case err != nil || s == nil || s.skipped || s.mode.Type() != fi.Mode().Type() || modeBits(s.mode) != modeBits(fi.Mode()):
			changed = true
		case fi.Mode().IsRegular() && s.stamp != stampOf(fi):
			changed = true
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(abs)
			changed = err != nil || target != s.target
		}
		if changed {
			return filepath.SkipAll
		}
		return nil
	})
	for q, s := range r.snap {
		if !changed && !s.skipped && (q == p || strings.HasPrefix(q, p+"/")) && !seen[q] {
			changed = true
		}
	}
	if changed {
		*refused = append(*refused, foreignStateRefusal(p))
	}
}

// errHolder refuses to replace a directory that holds what the booth
// keeps out of every change set.
var errHolder = errors.New("it holds the booth's state or the tape being recorded, which no change set replaces")

// stageRefusal is the refusal of an entry the copy holds that could not
// be staged.
func stageRefusal(p string, err error) Refusal {
	r := unreadableRefusal(p, err)
	r.Reason = strings.Replace(r.Reason, "could not read it", "could not stage it", 1)
	return r
}

// foldEntry folds the copy's entry at p, which fi describes.
func (r *copyRun) foldEntry(p string, fi fs.FileInfo, refused *[]Refusal) error {
	files := r.files
	abs := r.path(p)
	s := r.snap[p]
	was := func(m fs.FileMode) bool { return s != nil && !s.skipped && s.mode.Type() == m }
	if r.holders[p] && !fi.IsDir() {
		return errHolder
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		if !was(fs.ModeDir) {
			if err := r.stage(p, func() error { return r.makeDir(p, modeBits(mode), s != nil) }); err != nil {
				return err
			}
		} else if modeBits(s.mode) != modeBits(mode) {
			if err := r.stage(p, func() error { return files.Chmod(p, modeBits(mode)) }); err != nil {
				return err
			}
		}
		r.made[p] = true
		return r.foldDir(p, refused)
	case mode&fs.ModeSymlink != 0:
		// A symlink is data: staged with its target, whatever it points at.
		target, err := os.Readlink(abs)
		if err != nil {
			return err
		}
		if was(fs.ModeSymlink) && s.target == target && fi.ModTime().UnixNano() == s.stamp.mtime {
			return nil // touch -h changes only the time
		}
		target = r.relocateTarget(target)
		return r.stage(p, func() error {
			if err := files.RemoveAll(p); err != nil {
				return err
			}
			if err := files.Symlink(target, p); err != nil {
				return err
			}
			setLinkMtime(r.tx.up(p), fi.ModTime()) // best effort: as the child left it
			return nil
		})
	case mode.IsRegular():
		if was(0) && s.stamp == stampOf(fi) {
			return nil // untouched copy
		}
		if n := linkCount(fi); n > 1 {
			// Another name of the same file, maybe outside the workspace:
			// adopting the inode would commit a link to it.
			*refused = append(*refused, hardLinkRefusal(p, n))
			return nil
		}
		if err := r.relocate(p, abs, fi); err != nil {
			return err
		}
		return r.stage(p, func() error { return files.adopt(p, abs, fi) })
	}
	*refused = append(*refused, refusalFor(p, fi.Mode()))
	return nil
}

// makeDir stages the directory the child made at p: over what was there
// in the snapshot (replaced), or merged with a directory the user made
// there during the run.
func (r *copyRun) makeDir(p string, perm fs.FileMode, replaced bool) error {
	if !replaced {
		if cur, err := r.files.Lstat(p); err == nil && cur.IsDir() {
			return nil
		}
	}
	if err := r.files.RemoveAll(p); err != nil {
		return err
	}
	if err := r.files.Mkdir(p, perm); err != nil {
		return err
	}
	return r.files.Chmod(p, perm) // the copy's mode, which the umask already shaped
}

// stage runs fn, which stages p, after making sure p's directory is in
// the view and p's base is recorded as the snapshot saw it.
func (r *copyRun) stage(p string, fn func() error) error {
	if err := r.ensureDir(path.Dir(p)); err != nil {
		return err
	}
	if err := r.noteBase(p); err != nil {
		return err
	}
	return fn()
}

// ensureDir makes sure the copy's directory dir is a directory in the
// view: it is unless the user removed or replaced it in the real
// workspace during the run, and then it is staged again (a child staged
// in it is then a conflict at commit).
func (r *copyRun) ensureDir(dir string) error {
	if dir == "." || r.made[dir] {
		return nil
	}
	if cur, err := r.files.Lstat(dir); err == nil && cur.IsDir() {
		r.made[dir] = true
		return nil
	}
	fi, err := os.Lstat(r.path(dir))
	if err != nil {
		return err
	}
	if err := r.stage(dir, func() error { return r.makeDir(dir, modeBits(fi.Mode()), true) }); err != nil {
		return err
	}
	r.made[dir] = true
	return nil
}

// noteBase records the real side of p, before it is first staged, as the
// snapshot saw it: a real file the child saw is the base; for any other
// path (new in the copy, or staged before the run) the real side now is,
// unless it changed since Begin, and then nothing this run saw can vouch
// for it, so the commit will call it a conflict.
func (r *copyRun) noteBase(p string) error {
	tx := r.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if _, ok := tx.base[p]; ok {
		return nil
	}
	if s := r.snap[p]; s != nil && s.hasReal {
		return tx.recordBase(s.real)
	}
	fp, err := takeFingerprint(tx.real(p), p)
	if err != nil {
		return err
	}
	if fp.Exists && fp.Ctime > tx.meta.BeginCtime {
		fp = fingerprint{Path: p, Exists: true, Ctime: tx.meta.BeginCtime}
	}
	return tx.recordBase(fp)
}

// adopt moves a file the child wrote into the staging area at p.
func (f *Files) adopt(p, abs string, fi fs.FileInfo) error {
	tx := f.tx
	if old, err := f.Lstat(p); err == nil && old.IsDir() {
		if err := f.RemoveAll(p); err != nil {
			return err
		}
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	rel, _, err := f.prepare("exec", p, false)
	if err != nil {
		return err
	}
	if err := f.upperParent("exec", rel); err != nil {
		return err
	}
	if err := f.clearUpper(rel); err != nil {
		return err
	}
	if err := os.Rename(abs, tx.up(rel)); err != nil {
		return copyFile(abs, tx.up(rel), fi.Mode())
	}
	return nil
}

// readlink reads a symlink of the staged view.
func (f *Files) readlink(name string) (string, error) {
	tx := f.tx
	tx.mu.Lock()
	defer tx.mu.Unlock()
	e, err := f.find("readlink", name, false)
	if err != nil || !e.exists() {
		return "", err
	}
	return os.Readlink(e.abs)
}
