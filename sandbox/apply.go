//go:build unix

package sandbox

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// applier writes changes into the real workspace through directory file
// descriptors opened one component at a time with O_NOFOLLOW, so a
// directory swapped for a symlink on the real side cannot redirect a
// write outside the workspace.
//
// Nothing real is destroyed before the commit is done: whatever stands
// at a changed path is first moved aside, by rename, into the
// transaction's aside/ directory (beside itself, when that directory is
// on another file system), and a path that keeps its inode (a mode
// change) has its old mode logged first. So every step can be repeated
// (to finish a commit) or undone (to restore the workspace). For change
// i, aside/ holds:
//
//	<i>              the original, moved there whole (file, link or tree)
//	log "none <i>"   there was no original at the path
//	log "sib <i>"    the original was moved to .jbx-<i>.old in its own
//	                 directory (aside/ is on another file system)
//	log "mode <i> M" the path kept its inode; M was its mode
//	log "attrs <i> J" the path kept its inode; J (JSON, base64) holds
//	                 its user extended attributes and mtime before
//
// A log line is written before the step it describes.
type applier struct {
	root   string
	upper  string
	rootFD int
	dirs   map[string]int
	// repeat is set when recovering: changes may already be applied.
	repeat bool

	asideFD  int          // aside/, once opened
	asideLog *os.File     // aside/log, appended to
	moved    map[int]bool // originals in aside/ (found when opened, or moved since)
	sibs     map[int]bool // originals moved beside themselves
	// prelogged are the paths a first attempt logged as having no
	// original before it started; one that appeared since is still moved
	// aside, not overwritten.
	prelogged map[int]bool
	// dirTimes are set last (forward), where the file system allows.
	dirTimes []DirTime
}

// asideEntry is what the aside log says about one change.
type asideEntry struct {
	none, sib bool
	mode      uint32
	hasMode   bool
	attrs     *savedAttrs
}

// savedAttrs are what a path that keeps its inode had before the commit
// changed its extended attributes or mtime: the aside log's "attrs" line.
type savedAttrs struct {
	Xattrs map[string][]byte `json:"xattrs"`
	Mtime  time.Time         `json:"mtime,omitzero"` // files only
}

type entryMap = map[int]asideEntry

func newApplier(root, upper string) (*applier, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: open workspace: %w", err)
	}
	return &applier{root: root, upper: upper, rootFD: fd, dirs: map[string]int{}, asideFD: -1}, nil
}

func (a *applier) close() {
	for _, fd := range a.dirs {
		unix.Close(fd)
	}
	unix.Close(a.rootFD)
	if a.asideFD >= 0 {
		unix.Close(a.asideFD)
	}
	if a.asideLog != nil {
		a.asideLog.Close()
	}
}

// openAside opens (creating it with create) the transaction's aside
// directory and reads what an earlier attempt left in it.
func (a *applier) openAside(txDir string, create bool) (entryMap, error) {
	dir := filepath.Join(txDir, "aside")
	if create {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("sandbox: commit: %w", err)
		}
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && !create {
		return entryMap{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: commit: open %s: %w", dir, err)
	}
	a.asideFD = fd
	a.moved = map[int]bool{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: commit: %w", err)
	}
	for _, e := range ents {
		if i, err := strconv.Atoi(e.Name()); err == nil {
			a.moved[i] = true
		}
	}
	logged, err := readAsideLog(filepath.Join(dir, "log"))
	if err != nil {
		return nil, fmt.Errorf("sandbox: commit: %w", err)
	}
	a.sibs = map[int]bool{}
	for i, e := range logged {
		if e.sib {
			a.sibs[i] = true
		}
	}
	if create {
		if a.asideLog, err = os.OpenFile(filepath.Join(dir, "log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600); err != nil {
			return nil, fmt.Errorf("sandbox: commit: %w", err)
		}
	}
	return logged, nil
}

// readAsideLog reads aside/log; a torn last line is ignored.
func readAsideLog(name string) (entryMap, error) {
	m := entryMap{}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		i, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		e := m[i]
		switch {
		case fields[0] == "none":
			e.none = true
		case fields[0] == "sib":
			e.sib = true
		case fields[0] == "attrs" && len(fields) == 3:
			if e.attrs == nil { // the first one logged is the original
				if e.attrs = decodeAttrs(fields[2]); e.attrs == nil {
					continue
				}
			}
		case fields[0] == "mode" && len(fields) == 3:
			mode, err := strconv.ParseUint(fields[2], 8, 32)
			if err != nil {
				continue
			}
			if !e.hasMode { // the first one logged is the original
				e.mode, e.hasMode = uint32(mode), true
			}
		default:
			continue
		}
		m[i] = e
	}
	return m, sc.Err()
}

// decodeAttrs reads an "attrs" line's value; nil if it is torn.
func decodeAttrs(s string) *savedAttrs {
	data, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	var sa savedAttrs
	if json.Unmarshal(data, &sa) != nil {
		return nil
	}
	if sa.Xattrs == nil {
		sa.Xattrs = map[string][]byte{}
	}
	return &sa
}

func (a *applier) log(line string) error {
	_, err := io.WriteString(a.asideLog, line+"\n")
	return err
}

// dirFD opens the real directory rel, refusing symlinks on the way.
func (a *applier) dirFD(rel string) (int, error) {
	if rel == "." || rel == "" {
		return a.rootFD, nil
	}
	if fd, ok := a.dirs[rel]; ok {
		return fd, nil
	}
	parent, err := a.dirFD(path.Dir(rel))
	if err != nil {
		return -1, err
	}
	fd, err := unix.Openat(parent, path.Base(rel), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, pathErr("commit", rel, ErrEscape)
	}
	if err != nil {
		return -1, pathErr("commit", rel, err)
	}
	a.dirs[rel] = fd
	return fd, nil
}

// forget drops cached descriptors at or under rel after it was replaced.
func (a *applier) forget(rel string) {
	for k, fd := range a.dirs {
		if k == rel || strings.HasPrefix(k, rel+"/") {
			unix.Close(fd)
			delete(a.dirs, k)
		}
	}
}

// forward applies every change (repeatable, see applier), then sets the
// directory modes, deepest first, and flushes the file system. It
// returns a *PathError naming the change that failed. before (the real
// side just before the decision) lets a first attempt log every path
// that had no original in one write.
func (a *applier) forward(changes []Change, logged entryMap, before []fingerprint) error {
	if !a.repeat && len(before) == len(changes) {
		var b strings.Builder
		a.prelogged = map[int]bool{}
		for i, c := range changes {
			if !c.Implied && !before[i].Exists && c.Op != OpChmod && c.Op != OpChmodDir {
				fmt.Fprintf(&b, "none %d\n", i)
				e := logged[i]
				e.none = true
				logged[i] = e
				a.prelogged[i] = true
			}
		}
		if b.Len() > 0 {
			if err := a.log(strings.TrimSuffix(b.String(), "\n")); err != nil {
				return pathErr("commit", ".", err)
			}
		}
	}
	for i, c := range changes {
		if c.Implied {
			continue
		}
		if err := a.apply(i, c, logged[i]); err != nil {
			return err
		}
		if err := fail(fmt.Sprintf("apply-%d", i)); err != nil {
			return pathErr("commit "+string(c.Op), c.Path, err)
		}
	}
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.Implied || (c.Op != OpMkdir && c.Op != OpReplaceDir && c.Op != OpChmodDir) {
			continue
		}
		pfd, err := a.dirFD(path.Dir(c.Path))
		if err == nil {
			err = chmodAt(pfd, path.Base(c.Path), unixMode(c.Mode))
		}
		if err != nil {
			return pathErr("commit "+string(c.Op), c.Path, err)
		}
	}
	if err := fail("modes"); err != nil {
		return pathErr("commit", ".", err)
	}
	a.setDirTimes()
	if err := syncFS(a.rootFD); err != nil {
		return pathErr("commit", ".", fmt.Errorf("syncfs: %w", err))
	}
	return nil
}

// setDirTimes gives each staged directory the modification time it has
// in the staging area, children first, once nothing else changes in
// them. It is best effort: a directory the caller does not own (utimensat
// refuses) or that is no longer there keeps the time applying gave it,
// as a plain run's would be, and nothing is undone for it.
func (a *applier) setDirTimes() {
	for i := len(a.dirTimes) - 1; i >= 0; i-- {
		d := a.dirTimes[i]
		if pfd, err := a.dirFD(path.Dir(d.Path)); err == nil {
			setMtimeAt(pfd, path.Base(d.Path), d.Mtime)
		}
	}
}

// apply makes change i real, moving the original aside first. Running it
// again gives the same result.
func (a *applier) apply(i int, c Change, was asideEntry) error {
	pfd, err := a.dirFD(path.Dir(c.Path))
	if err != nil {
		return err
	}
	base := path.Base(c.Path)
	aside := func() error {
		err := a.moveAside(i, pfd, base, was)
		if err == nil {
			err = fail(fmt.Sprintf("aside-%d", i))
		}
		return err
	}
	switch c.Op {
	case OpWrite:
		// The staged inode is linked in: overlayfs's own attributes
		// (the copy-up's origin), ACLs and capabilities go first.
		if err = stripUncommitted(filepath.Join(a.upper, filepath.FromSlash(c.Path))); err == nil {
			err = aside()
		}
		if err == nil {
			err = a.place(pfd, i, base, func(tmp string) error { return a.linkStaged(c, pfd, tmp) })
		}
	case OpSymlink:
		if err = aside(); err == nil {
			err = a.place(pfd, i, base, func(tmp string) error { return a.symlink(c, pfd, tmp) })
		}
	case OpMkdir, OpReplaceDir:
		if c.Op == OpMkdir && a.keepsDir(i, pfd, base, was) {
			// A real directory already there (made on both sides) is
			// kept, as mkdir -p would: only its mode (and attributes)
			// change.
			if err = a.keepMeta(i, pfd, base, was, c); err == nil && c.Xattrs != nil {
				err = setXattrsAt(pfd, base, c.Xattrs)
			}
			break
		}
		a.forget(c.Path)
		if err = aside(); err == nil {
			err = unix.Mkdirat(pfd, base, unixMode(c.Mode)|0o700)
			if errors.Is(err, unix.EEXIST) && a.repeat {
				err = nil // made before the crash
			}
		}
		if err == nil && len(c.Xattrs) > 0 {
			err = setXattrsAt(pfd, base, c.Xattrs)
		}
	case OpDelete:
		a.forget(c.Path)
		err = aside()
	case OpChmod:
		if err = a.keepMeta(i, pfd, base, was, c); err == nil {
			err = a.setMeta(pfd, base, c)
		}
	case OpChmodDir:
		if err = a.keepMeta(i, pfd, base, was, c); err == nil && c.Xattrs != nil {
			err = setXattrsAt(pfd, base, c.Xattrs)
		}
	default:
		err = fmt.Errorf("unknown op %q", c.Op)
	}
	if err != nil {
		return pathErr("commit "+string(c.Op), c.Path, err)
	}
	return nil
}

// keepsDir reports whether change i (a mkdir) keeps a real directory
// instead of moving the original aside.
func (a *applier) keepsDir(i, pfd int, base string, was asideEntry) bool {
	if a.moved[i] || was.none || was.sib {
		return false // an earlier attempt moved it aside: the directory there is ours
	}
	if was.hasMode || was.attrs != nil {
		return true
	}
	var st unix.Stat_t
	return unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// keepMeta logs, before they change, the user extended attributes and
// (for a file) the mtime of base when change c sets them, then its mode
// (keepMode).
func (a *applier) keepMeta(i, pfd int, base string, was asideEntry, c Change) error {
	if was.attrs == nil && (c.Xattrs != nil || !c.Mtime.IsZero()) {
		var st unix.Stat_t
		if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		old, err := xattrsAt(pfd, base)
		if err != nil {
			return err
		}
		sa := savedAttrs{Xattrs: old}
		if sa.Xattrs == nil {
			sa.Xattrs = map[string][]byte{}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			sa.Mtime = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
		}
		data, err := json.Marshal(sa)
		if err != nil {
			return err
		}
		if err := a.log(fmt.Sprintf("attrs %d %s", i, base64.RawStdEncoding.EncodeToString(data))); err != nil {
			return err
		}
	}
	return a.keepMode(i, pfd, base, was)
}

// setMeta gives a file that keeps its inode (OpChmod) the change's
// extended attributes, mode and mtime, in that order: the attributes
// may need the file writable for the while, and the mtime comes last.
func (a *applier) setMeta(pfd int, base string, c Change) error {
	if c.Xattrs != nil {
		if err := setXattrsAt(pfd, base, c.Xattrs); err != nil {
			return err
		}
	}
	if err := chmodAt(pfd, base, unixMode(c.Mode)); err != nil {
		return err
	}
	if !c.Mtime.IsZero() {
		return setMtimeAt(pfd, base, c.Mtime)
	}
	return nil
}

// symlink makes change c's link as tmp, with the mtime the agent left it.
func (a *applier) symlink(c Change, pfd int, tmp string) error {
	if err := unix.Symlinkat(c.Target, pfd, tmp); err != nil {
		return err
	}
	if !c.Mtime.IsZero() {
		return setMtimeAt(pfd, tmp, c.Mtime)
	}
	return nil
}

// keepMode logs the mode of base before it changes, and makes a
// directory writable and searchable by its owner until forward sets the
// final modes, so that changes inside it can be made.
func (a *applier) keepMode(i, pfd int, base string, was asideEntry) error {
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if !was.hasMode {
		if err := a.log(fmt.Sprintf("mode %d %o", i, st.Mode&0o7777)); err != nil {
			return err
		}
	}
	if err := fail(fmt.Sprintf("aside-%d", i)); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o700 != 0o700 {
		return chmodAt(pfd, base, uint32(st.Mode&0o7777)|0o700)
	}
	return nil
}

// moveAside moves whatever stands at base to aside/<i> (or beside itself
// when aside/ is on another file system), or logs that nothing does.
func (a *applier) moveAside(i, pfd int, base string, was asideEntry) error {
	switch {
	case a.moved[i] || was.none && !a.prelogged[i]:
		return nil // done before a crash
	case was.sib:
		if existsAt(pfd, sibName(i)) {
			return nil
		}
	}
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		if was.sib || was.none {
			return nil
		}
		return a.log(fmt.Sprintf("none %d", i))
	}
	if err != nil {
		return err
	}
	if !was.sib {
		err = renameDirAware(pfd, base, a.asideFD, strconv.Itoa(i), st)
		if err == nil {
			a.moved[i] = true
		}
		if !errors.Is(err, unix.EXDEV) {
			return err
		}
		if err := a.log(fmt.Sprintf("sib %d", i)); err != nil {
			return err
		}
	}
	a.sibs[i] = true
	return unix.Renameat(pfd, base, pfd, sibName(i))
}

// renameDirAware renames across directories; a directory that its owner
// cannot write (whose ".." the rename must rewrite) is made writable for
// the move and given its mode back after.
func renameDirAware(fromFD int, from string, toFD int, to string, st unix.Stat_t) error {
	err := unix.Renameat(fromFD, from, toFD, to)
	isDir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir || !(errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM)) || st.Mode&0o200 != 0 {
		return err
	}
	mode := uint32(st.Mode & 0o7777)
	if unix.Fchmodat(fromFD, from, mode|0o700, 0) != nil {
		return err
	}
	if err = unix.Renameat(fromFD, from, toFD, to); err != nil {
		unix.Fchmodat(fromFD, from, mode, 0)
		return err
	}
	return unix.Fchmodat(toFD, to, mode, 0)
}

func sibName(i int) string { return fmt.Sprintf(".jbx-%d.old", i) }
func tmpName(i int) string { return fmt.Sprintf(".jbx-%d.tmp", i) }

func existsAt(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// place builds the new entry under a temporary name, then renames it to
// base, where nothing stands any more (or, when repeating, what an
// earlier attempt placed). A stale temporary name is cleared first.
func (a *applier) place(pfd, i int, base string, build func(tmp string) error) error {
	tmp := tmpName(i)
	err := build(tmp)
	if errors.Is(err, unix.EEXIST) {
		unix.Unlinkat(pfd, tmp, 0)
		err = build(tmp)
	}
	if err != nil {
		return err
	}
	if err := unix.Renameat(pfd, tmp, pfd, base); err != nil {
		unix.Unlinkat(pfd, tmp, 0)
		return err
	}
	if a.repeat {
		// rename does nothing when both names already link the same
		// inode (a repeated apply): drop the temporary name then.
		if err := unix.Unlinkat(pfd, tmp, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return err
		}
	}
	return nil
}

// linkStaged hard-links the staged file in as tmp, or copies it when the
// state directory lives on another file system: then with its extended
// attributes and mtime, and another name of a hard-link group is linked
// to the group's first name, already in place (changes apply in path
// order). Linking the staged inode keeps all of that by itself, and the
// names of a group are names of one staged inode.
func (a *applier) linkStaged(c Change, pfd int, tmp string) error {
	src := filepath.Join(a.upper, filepath.FromSlash(c.Path))
	err := unix.Linkat(unix.AT_FDCWD, src, pfd, tmp, 0)
	if !errors.Is(err, unix.EXDEV) {
		return err
	}
	if c.Link != "" {
		lfd, err := a.dirFD(path.Dir(c.Link))
		if err != nil {
			return err
		}
		return unix.Linkat(lfd, path.Base(c.Link), pfd, tmp, 0)
	}
	if err := a.copyStaged(c, src, pfd, tmp); err != nil {
		return err
	}
	if len(c.Xattrs) > 0 {
		if err := setXattrsAt(pfd, tmp, c.Xattrs); err != nil {
			return err
		}
	}
	if !c.Mtime.IsZero() {
		return setMtimeAt(pfd, tmp, c.Mtime)
	}
	return nil
}

// copyStaged copies the staged file src in as tmp, with the change's mode.
func (a *applier) copyStaged(c Change, src string, pfd int, tmp string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fd, err := unix.Openat(pfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), tmp)
	_, err = io.Copy(out, in)
	if err == nil {
		err = unix.Fchmod(fd, unixMode(c.Mode))
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// undo puts back every original that forward moved aside and removes
// what it placed, last change first; repeating it is harmless. Modes it
// changed are restored from the log.
func (a *applier) undo(changes []Change, logged entryMap) error {
	// Directories forward made or changed are made writable by their
	// owner first, so what is inside them can be taken out again.
	for i, c := range changes {
		if c.Implied || (c.Op != OpMkdir && c.Op != OpReplaceDir && c.Op != OpChmodDir) {
			continue
		}
		if !a.moved[i] && logged[i] == (asideEntry{}) {
			continue
		}
		if pfd, err := a.dirFD(path.Dir(c.Path)); err == nil {
			var st unix.Stat_t
			base := path.Base(c.Path)
			if unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Mode&0o700 != 0o700 {
				unix.Fchmodat(pfd, base, uint32(st.Mode&0o7777)|0o700, 0)
			}
		}
	}
	for i := len(changes) - 1; i >= 0; i-- {
		c := changes[i]
		if c.Implied {
			continue
		}
		if err := a.undoOne(i, c, logged[i]); err != nil {
			return pathErr("undo "+string(c.Op), c.Path, err)
		}
		if err := fail(fmt.Sprintf("undo-%d", i)); err != nil {
			return pathErr("undo "+string(c.Op), c.Path, err)
		}
	}
	if err := syncFS(a.rootFD); err != nil {
		return pathErr("undo", ".", fmt.Errorf("syncfs: %w", err))
	}
	return nil
}

func (a *applier) undoOne(i int, c Change, was asideEntry) error {
	pfd, err := a.dirFD(path.Dir(c.Path))
	if err != nil {
		// Without its parent, a path forward never reached, or one an
		// earlier undo already removed (with the parent forward made):
		// only an original still kept aside must go back.
		if !a.moved[i] && (was == (asideEntry{}) || errors.Is(err, unix.ENOENT)) {
			return nil
		}
		return err
	}
	base := path.Base(c.Path)
	if err := unix.Unlinkat(pfd, tmpName(i), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	switch {
	case a.moved[i]:
		if err := removeAt(pfd, base); err != nil {
			return err
		}
		a.forget(c.Path)
		var st unix.Stat_t
		if err := unix.Fstatat(a.asideFD, strconv.Itoa(i), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		if err := renameDirAware(a.asideFD, strconv.Itoa(i), pfd, base, st); err != nil {
			return err
		}
		a.moved[i] = false
	case was.sib:
		if !existsAt(pfd, sibName(i)) {
			return nil // never moved
		}
		if err := removeAt(pfd, base); err != nil {
			return err
		}
		a.forget(c.Path)
		return unix.Renameat(pfd, sibName(i), pfd, base)
	case was.none:
		a.forget(c.Path)
		return removeAt(pfd, base)
	case was.hasMode || was.attrs != nil:
		err := restoreMeta(pfd, base, was)
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	return nil
}

// restoreMeta gives a path that kept its inode back the extended
// attributes, mode and mtime the aside log says it had.
func restoreMeta(pfd int, base string, was asideEntry) error {
	if was.attrs != nil {
		if err := setXattrsAt(pfd, base, was.attrs.Xattrs); err != nil {
			return err
		}
	}
	if was.hasMode {
		if err := chmodAt(pfd, base, was.mode); err != nil {
			return err
		}
	}
	if was.attrs != nil && !was.attrs.Mtime.IsZero() {
		return setMtimeAt(pfd, base, was.attrs.Mtime)
	}
	return nil
}

// cleanup removes the originals forward moved beside themselves, once
// the commit is decided and applied.
func (a *applier) cleanup(changes []Change) error {
	for i, c := range changes {
		if !a.sibs[i] {
			continue
		}
		pfd, err := a.dirFD(path.Dir(c.Path))
		if err == nil {
			err = removeAt(pfd, sibName(i))
		}
		if err != nil {
			return pathErr("commit", c.Path, err)
		}
	}
	return nil
}

// usedSib reports whether an original was moved beside itself.
func (a *applier) usedSib() bool { return len(a.sibs) > 0 }

// verify compares the real side of every change's path with before: the
// same kind, inode and mode, and for files the same size and mtime. It
// returns the paths that differ.
func verify(root string, changes []Change, before []fingerprint) []string {
	var differ []string
	for i, c := range changes {
		if i >= len(before) {
			break
		}
		now, err := takeFingerprint(filepath.Join(root, filepath.FromSlash(c.Path)), c.Path)
		was := before[i]
		same := err == nil && now.Exists == was.Exists
		if same && now.Exists {
			same = now.Ino == was.Ino && now.Mode == was.Mode
			if now.Mode&unix.S_IFMT != unix.S_IFDIR {
				same = same && now.Size == was.Size && now.Mtime == was.Mtime
			}
		}
		if !same {
			differ = append(differ, c.Path)
		}
	}
	sort.Strings(differ)
	return differ
}

// unixMode turns a change's mode into chmod bits, setuid, setgid and
// sticky included.
func unixMode(m fs.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		mode |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		mode |= unix.S_ISVTX
	}
	return mode
}

// removeAt removes base (a whole tree if a directory) under pfd.
func removeAt(pfd int, base string) error {
	var st unix.Stat_t
	err := unix.Fstatat(pfd, base, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.Unlinkat(pfd, base, 0)
	}
	// os.RemoveAll walks with openat and never follows symlinks.
	return removeAll(fmt.Sprintf("/proc/self/fd/%d/%s", pfd, base))
}

// chmodAt changes the mode of base without following a symlink there.
// A file its owner cannot read is reached through an O_PATH descriptor.
func chmodAt(pfd int, base string, mode uint32) error {
	fd, err := unix.Openat(pfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) {
		return chmodByPath(pfd, base, mode)
	}
	if errors.Is(err, unix.ELOOP) {
		return ErrEscape
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fchmod(fd, mode)
}

// hasOverlayOrigin reports whether the staged entry p was copied up by
// overlayfs from a real file (which then existed): overlayfs marks a
// copy-up with an origin xattr (user. with userxattr, trusted. without).
func hasOverlayOrigin(p string) bool {
	for _, name := range []string{"user.overlay.origin", "trusted.overlay.origin"} {
		if _, err := unix.Lgetxattr(p, name, nil); err == nil {
			return true
		}
	}
	return false
}
