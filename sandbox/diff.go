package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Diff returns the change set staged so far. Whatever cannot be
// committed safely (a fifo, socket or device, a file that shares its
// inode with something outside the change set, a path over PATH_MAX, an
// entry it cannot read) is listed in ChangeSet.Refused with its reason,
// and the rest of the change set is returned whole. A symlink is data:
// its target is recorded whatever it points at. Names the agent gave one
// new file are a hard-link group (Change.Link); modes keep setuid, setgid
// and sticky; a file whose content is the same but whose mode, mtime or
// user extended attributes changed is an OpChmod carrying them.
func (tx *Tx) Diff() (ChangeSet, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return ChangeSet{}, err
	}
	return tx.diff()
}

// diffRun is one walk of the staging area: the change set it builds, and
// the staged files with more than one name, by inode, grouped once the
// walk is done (diffLinks).
type diffRun struct {
	*ChangeSet
	links map[uint64][]linkName
	// steps, when set, is a read while the child runs (Steps.Next): no
	// staged file's mode is touched, a file unchanged since the boundary
	// before is not read again, and seen collects what was read.
	steps *Steps
	seen  map[string]stepCached
}

// linkName is one name of a staged file with several.
type linkName struct {
	path      string
	fi, lower fs.FileInfo
}

func (tx *Tx) diff() (ChangeSet, error) {
	cs := ChangeSet{TxID: tx.meta.ID, Changes: []Change{}} // [] in JSON when nothing is staged, not null
	run := &diffRun{ChangeSet: &cs, links: map[uint64][]linkName{}}
	if err := tx.diffLive(run); err != nil {
		return ChangeSet{}, err
	}
	kept, err := tx.keptRefusals()
	if err != nil {
		return ChangeSet{}, err
	}
	cs.Refused = sortRefusals(append(cs.Refused, kept...))
	tx.markChainsOut(&cs)
	return cs, nil
}

// newFileOwner is the owner of a new staged file, "uid:gid", when it is
// not the one a file made by this user gets (an agent run as root chowned
// it; the staged inode, which has it, is linked in), else "".
func (tx *Tx) newFileOwner(p string, fi fs.FileInfo) string {
	uid, gid, ok := infoOwner(fi)
	if !ok || uid == os.Geteuid() && gid == os.Getegid() {
		return ""
	}
	if uid == os.Geteuid() {
		// A folder with the setgid bit gives what is made in it its group.
		if dir, err := os.Stat(tx.up(path.Dir(p))); err == nil && dir.Mode()&fs.ModeSetgid != 0 {
			if _, dgid, ok := infoOwner(dir); ok && dgid == gid {
				return ""
			}
		}
	}
	return fmt.Sprintf("%d:%d", uid, gid)
}

// markChainsOut marks the symlinks of cs that lead out of the workspace
// through other links (Change.chainOut): the staged ones, and those the
// workspace holds where cs leaves them.
func (tx *Tx) markChainsOut(cs *ChangeSet) {
	byPath := make(map[string]*Change, len(cs.Changes))
	for i := range cs.Changes {
		byPath[cs.Changes[i].Path] = &cs.Changes[i]
	}
	link := func(rel string) (string, bool) {
		if c, ok := byPath[rel]; ok {
			return c.Target, c.Op == OpSymlink
		}
		// Each folder above rel is resolved already: no link of them is
		// followed here.
		if fi, err := os.Lstat(tx.real(rel)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return "", false
		}
		t, err := os.Readlink(tx.real(rel))
		return filepath.ToSlash(t), err == nil
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if c.Op == OpSymlink && !leadsOut(c.Path, c.Target) && resolvesOut(c.Path, c.Target, link) {
			c.chainOut = true
		}
	}
}

// diffLive is one walk of the staging area into run, its changes sorted:
// what Diff and Steps.Next share. It takes no lock.
func (tx *Tx) diffLive(run *diffRun) error {
	if _, err := os.Lstat(tx.upper); err != nil {
		return pathErr("diff", ".", err)
	}
	tx.diffRoot(run)
	tx.diffDir(".", true, run)
	tx.diffLinks(run)
	sort.Slice(run.Changes, func(i, j int) bool { return run.Changes[i].Path < run.Changes[j].Path })
	sort.Slice(run.DirTimes, func(i, j int) bool { return run.DirTimes[i].Path < run.DirTimes[j].Path })
	return nil
}

// diffRoot records a chmod of the workspace folder itself: the staging
// area's top has the folder's mode from Begin, which the agent changed.
func (tx *Tx) diffRoot(cs *diffRun) {
	fi, err := os.Lstat(tx.upper)
	if err != nil || tx.meta.RootMode == 0 || modeBits(fi.Mode()) == modeBits(tx.meta.RootMode) {
		return
	}
	cs.Changes = append(cs.Changes, Change{Path: ".", Op: OpChmodDir, Mode: modeBits(fi.Mode())})
}

// diffDir walks one staging directory; lowerOn says the real directory of
// the same path shows through it. What it cannot read it refuses.
func (tx *Tx) diffDir(rel string, lowerOn bool, cs *diffRun) {
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
		if tx.ws.foreignState(p) {
			cs.Refused = append(cs.Refused, foreignStateRefusal(p))
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

func (tx *Tx) diffEntry(p string, fi, lower fs.FileInfo, cs *diffRun) {
	switch {
	case isWhiteout(fi):
		if lower != nil {
			cs.Changes = append(cs.Changes, Change{Path: p, Op: OpDelete, IsDir: lower.IsDir()})
			tx.implied(p, lower, cs)
		}
	case fi.IsDir():
		tx.diffUpperDir(p, fi, lower, cs)
	case fi.Mode()&fs.ModeSymlink != 0:
		tx.diffSymlink(p, fi, lower, cs)
	case fi.Mode().IsRegular():
		tx.diffFile(p, fi, lower, cs)
	default:
		cs.Refused = append(cs.Refused, refusalFor(p, fi.Mode()))
	}
}

// diffUpperDir records a staged directory: new, replacing the real one
// (opaque), or with a new mode or new user extended attributes; and its
// modification time, for the commit to set last (DirTime).
func (tx *Tx) diffUpperDir(p string, fi, lower fs.FileInfo, cs *diffRun) {
	mode := modeBits(fi.Mode())
	opaque := isOpaque(tx.up(p))
	attrs, err := userXattrs(tx.up(p))
	if err != nil {
		cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
		return
	}
	switch {
	case lower == nil || !lower.IsDir():
		cs.Changes = append(cs.Changes, Change{Path: p, Op: OpMkdir, Mode: mode, Xattrs: attrs})
	case opaque:
		cs.Changes = append(cs.Changes, Change{Path: p, Op: OpReplaceDir, Mode: mode, Xattrs: attrs})
		tx.implied(p, lower, cs)
	default:
		c := Change{Path: p, Op: OpChmodDir, Mode: mode}
		if c.Xattrs, err = tx.changedXattrs(p, attrs); err != nil {
			cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
			return
		}
		if modeBits(lower.Mode()) != mode || c.Xattrs != nil {
			cs.Changes = append(cs.Changes, c)
		}
	}
	cs.DirTimes = append(cs.DirTimes, DirTime{Path: p, Mtime: fi.ModTime()})
	tx.diffDir(p, lower != nil && lower.IsDir() && !opaque, cs)
}

// changedXattrs returns staged (never nil) when the real path's user
// extended attributes differ from them, else nil: nothing to change.
func (tx *Tx) changedXattrs(p string, staged map[string][]byte) (map[string][]byte, error) {
	real, err := userXattrs(tx.real(p))
	if err != nil || maps.EqualFunc(staged, real, bytes.Equal) {
		return nil, err
	}
	if staged == nil {
		return map[string][]byte{}, nil
	}
	return staged, nil
}

// diffSymlink records a staged symlink as data: its target, whatever it
// points at (an absolute path, "..", nothing). Commit writes the link
// itself and never follows it.
func (tx *Tx) diffSymlink(p string, fi, lower fs.FileInfo, cs *diffRun) {
	target, err := os.Readlink(tx.up(p))
	if err != nil {
		cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
		return
	}
	if lower != nil && lower.Mode()&fs.ModeSymlink != 0 {
		if old, _ := os.Readlink(tx.real(p)); old == target && fi.ModTime().Equal(lower.ModTime()) {
			return // copied up, never changed (touch -h changes only the time)
		}
	}
	cs.Changes = append(cs.Changes, Change{Path: p, Op: OpSymlink, Target: target, Mtime: fi.ModTime()})
	tx.implied(p, lower, cs)
}

// diffFile records a staged regular file. One with more than one name
// waits for the end of the walk (diffLinks).
func (tx *Tx) diffFile(p string, fi, lower fs.FileInfo, cs *diffRun) {
	if linkCount(fi) > 1 {
		cs.links[inode(fi)] = append(cs.links[inode(fi)], linkName{p, fi, lower})
		return
	}
	c, err := tx.stepFileChange(p, fi, lower, cs)
	if err != nil {
		cs.Refused = append(cs.Refused, unreadableRefusal(p, err))
		return
	}
	if c.Op == "" {
		return // copied up, never changed
	}
	if c.Op == OpWrite && lower != nil && lower.Mode().IsRegular() && linkCount(lower) > 1 {
		cs.Refused = append(cs.Refused, pairRefusal(p, linkCount(lower)))
		return
	}
	cs.Changes = append(cs.Changes, c)
	tx.implied(p, lower, cs)
}

// stepFileChange is fileChange, or, for a read while the child runs,
// the change read at the boundary before when the file was not touched
// since, else stagedFileChange without making the file readable.
func (tx *Tx) stepFileChange(p string, fi, lower fs.FileInfo, cs *diffRun) (Change, error) {
	if cs.steps == nil {
		return tx.fileChange(p, fi, lower)
	}
	c, ok := cs.steps.cached(p, fi)
	if !ok {
		var err error
		if c, err = tx.stagedFileChange(p, fi, lower); err != nil {
			return c, err
		}
	}
	cs.seen[p] = stepCached{statKey(fi), c}
	return c, nil
}

// fileChange is the change a staged regular file with one name makes: a
// write, an OpChmod when only its mode, mtime or user extended
// attributes differ from the real file's, or none (Op "") when nothing
// does.
func (tx *Tx) fileChange(p string, fi, lower fs.FileInfo) (c Change, err error) {
	err = readableStaged(tx.up(p), fi, func() error {
		c, err = tx.stagedFileChange(p, fi, lower)
		return err
	})
	return c, err
}

// stagedFileChange is fileChange, the staged file readable.
func (tx *Tx) stagedFileChange(p string, fi, lower fs.FileInfo) (Change, error) {
	attrs, err := userXattrs(tx.up(p))
	if err != nil {
		return Change{}, err
	}
	c := Change{Path: p, Op: OpWrite, Mode: modeBits(fi.Mode()), Size: fi.Size(), Mtime: fi.ModTime(), Xattrs: attrs, staged: tx.up(p)}
	if lower == nil || !lower.Mode().IsRegular() {
		c.Owner = tx.newFileOwner(p, fi)
		return c, nil
	}
	c.Owner = ownerChange(fi, lower)
	if lower.Size() != fi.Size() {
		return c, nil
	}
	if same, err := sameContent(tx.up(p), tx.real(p)); err != nil || !same || c.Owner != "" {
		return c, err // a new owner: the staged inode, which has it, is linked in
	}
	chmod := Change{Path: p, Op: OpChmod, Mode: c.Mode}
	if chmod.Xattrs, err = tx.changedXattrs(p, attrs); err != nil {
		return Change{}, err
	}
	if !fi.ModTime().Equal(lower.ModTime()) {
		chmod.Mtime = fi.ModTime()
	}
	if modeBits(lower.Mode()) == c.Mode && chmod.Xattrs == nil && chmod.Mtime.IsZero() {
		return Change{}, nil
	}
	return chmod, nil
}

// diffLinks turns each staged file with several names into a hard-link
// group: every name is a write, the first in path order with the
// content, the others linking to it (Change.Link), so that the commit
// makes one file with those names, as a plain run would. A name that was
// the real file, copied up unchanged when the agent linked it, is in the
// group too. A file with a name the staging area does not hold (a link to
// a file anywhere else on the file system) is refused, every name of it.
func (tx *Tx) diffLinks(cs *diffRun) {
	for _, names := range cs.links {
		sort.Slice(names, func(i, j int) bool { return names[i].path < names[j].path })
		n := linkCount(names[0].fi)
		var attrs map[string][]byte
		read := func() (err error) {
			attrs, err = userXattrs(tx.up(names[0].path))
			return err
		}
		var err error
		if cs.steps != nil {
			err = read() // never chmod a file the child may be using
		} else {
			err = readableStaged(tx.up(names[0].path), names[0].fi, read)
		}
		// A name that was a real file with several names (a pair the
		// workspace held: a linked to b before the run): the group puts
		// a new file there, and the real file's other names, which are
		// not in the group, would keep the old content, as a plain write
		// to the pair would (refused in diffFile).
		pair := uint64(0)
		for _, name := range names {
			if name.lower != nil && name.lower.Mode().IsRegular() && linkCount(name.lower) > 1 {
				pair = max(pair, linkCount(name.lower))
			}
		}
		for i, name := range names {
			switch {
			case pair > 0:
				cs.Refused = append(cs.Refused, pairRefusal(name.path, pair))
				continue
			case uint64(len(names)) != n:
				cs.Refused = append(cs.Refused, hardLinkRefusal(name.path, n))
				continue
			case err != nil:
				cs.Refused = append(cs.Refused, unreadableRefusal(name.path, err))
				continue
			}
			fi := name.fi
			c := Change{Path: name.path, Op: OpWrite, Mode: modeBits(fi.Mode()), Size: fi.Size(), Mtime: fi.ModTime(), Xattrs: attrs, staged: tx.up(name.path)}
			if i > 0 {
				c.Link = names[0].path
			}
			cs.Changes = append(cs.Changes, c)
			tx.implied(name.path, name.lower, cs)
		}
	}
}

// implied lists, as implied deletes, every real path under p that the
// staging area does not hold, when p was a real directory now replaced.
// A real directory it cannot read is listed, and not what it holds.
func (tx *Tx) implied(p string, lower fs.FileInfo, cs *diffRun) {
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

// readableStaged runs fn with the staged file abs (which fi describes)
// readable: a file the agent made unreadable to its owner (chmod 000) is
// the booth's own copy, so the booth gives its owner read for the while,
// then the mode back. An ordinary user cannot read such a file
// otherwise; root can anyway.
func readableStaged(abs string, fi fs.FileInfo, fn func() error) error {
	if fi.Mode().Perm()&0o400 != 0 || os.Geteuid() == 0 || !ownedByMe(fi) {
		return fn()
	}
	if err := os.Chmod(abs, modeBits(fi.Mode())|0o400); err != nil {
		return err
	}
	err := fn()
	if cerr := os.Chmod(abs, modeBits(fi.Mode())); err == nil {
		err = cerr
	}
	return err
}

// sameContent compares two files byte for byte.
func sameContent(a, b string) (bool, error) {
	fa, err := os.Open(a)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if errors.Is(err, fs.ErrPermission) {
		return false, nil // a real file its owner cannot read (mode 000): taken as changed
	}
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
