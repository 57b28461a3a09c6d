package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// OpRestore, in a step's changes only (Steps.Next), says a path that
// differed at the boundary before is back as it was when the transaction
// began.
const OpRestore = tapefmt.OpRestore

// Steps reads a transaction's staging area while its child runs, at each
// step boundary, and says what changed since the boundary before. It
// reads the overlay's upper layer only (what the agent wrote), never the
// whole workspace, and takes no lock of the transaction's, so it runs
// while Exec holds the transaction; a staged file whose inode, size,
// times and mode are those of the boundary before is not read again. It
// is meant for the overlay booth: a copy-mode child writes elsewhere, and
// Next sees nothing of it until the copy is brought back. A Steps is not
// safe for concurrent use.
type Steps struct {
	tx    *Tx
	last  map[string]string     // path -> the fingerprint of its change at the boundary before
	cache map[string]stepCached // path -> the change a staged file made, by its stat
}

// stepCached is a staged file's change and the stat it was read at.
type stepCached struct {
	key stepStat
	c   Change
}

// stepStat is what says a staged file was not touched since it was read.
type stepStat struct {
	ino, size, ctime, mtime int64
	mode                    fs.FileMode
}

func statKey(fi fs.FileInfo) stepStat {
	return stepStat{int64(inode(fi)), fi.Size(), ctimeOf(fi), fi.ModTime().UnixNano(), fi.Mode()}
}

// Steps starts reading tx's staging area at step boundaries; the first
// Next reports every change staged so far.
func (tx *Tx) Steps() *Steps {
	return &Steps{tx: tx, last: map[string]string{}, cache: map[string]stepCached{}}
}

// Next reads the staging area now and returns, in path order, each path
// whose change differs from the boundary before: its change as a change
// set holds it (an OpWrite's content readable by Open until the next
// change to the file), or an OpRestore when it no longer differs from
// the start. Refused entries are left out: the change set lists them.
func (s *Steps) Next() ([]Change, error) {
	cs := ChangeSet{TxID: s.tx.meta.ID}
	run := &diffRun{ChangeSet: &cs, links: map[uint64][]linkName{}, steps: s, seen: map[string]stepCached{}}
	if err := s.tx.diffLive(run); err != nil {
		return nil, err
	}
	s.cache = run.seen
	now := make(map[string]string, len(cs.Changes))
	var out []Change
	for _, c := range cs.Changes {
		fp := stepPrint(c)
		now[c.Path] = fp
		if s.last[c.Path] != fp {
			out = append(out, c)
		}
	}
	for p := range s.last {
		if _, ok := now[p]; !ok {
			out = append(out, Change{Path: p, Op: OpRestore})
		}
	}
	s.last = now
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// stepPrint is what tells one state of a path from another.
func stepPrint(c Change) string {
	return fmt.Sprintf("%s|%o|%d|%s|%t|%t|%d|%s|%s|%v", c.Op, c.Mode, c.Size, c.Target, c.IsDir, c.Implied,
		c.Mtime.UnixNano(), c.Link, c.Owner, c.Xattrs)
}

// cached is the change a staged file made when it was last read, if its
// stat says it was not touched since.
func (s *Steps) cached(p string, fi fs.FileInfo) (Change, bool) {
	e, ok := s.cache[p]
	if !ok || e.key != statKey(fi) {
		return Change{}, false
	}
	return e.c, true
}

// WalkStart calls fn for every path of the real workspace, in lexical
// order, but the booth's own state: the workspace as the transaction
// found it, while the child has not committed anything (record
// --snapshot). abs is the path to read it by; a directory fn answers
// fs.SkipDir is not entered.
func (tx *Tx) WalkStart(fn func(rel, abs string, fi fs.FileInfo) error) error {
	root := tx.ws.root
	return filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if abs == root {
			return nil
		}
		rel, _ := filepath.Rel(root, abs)
		rel = filepath.ToSlash(rel)
		if tx.ws.isState(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st := filepath.ToSlash(tx.ws.stateRel); st != "" && strings.HasPrefix(st, rel+"/") {
			return nil // a folder only there to hold the booth's state: what else it holds is listed
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return fn(rel, abs, fi)
	})
}
