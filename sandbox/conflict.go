package sandbox

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// baseName is the append-only log of fingerprints taken when a path was
// first staged in process: one JSON object per line.
const baseName = "base.jsonl"

// fingerprint is what the real side looked like for one path. Two equal
// fingerprints mean the file was not replaced, written or chmodded.
type fingerprint struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Size   int64  `json:"size,omitempty"`
	Mtime  int64  `json:"mtime,omitempty"`
	Ctime  int64  `json:"ctime,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	Mode   uint32 `json:"mode,omitempty"`
}

// isDir reports whether the fingerprinted path is a directory (st_mode's
// S_IFDIR, the same on every Unix).
func (fp fingerprint) isDir() bool { return fp.Exists && fp.Mode&0o170000 == 0o040000 }

// noteBase records the real side of rel the first time it is staged.
// The caller holds tx.mu.
func (tx *Tx) noteBase(rel string, e entry) error {
	if _, ok := tx.base[rel]; ok {
		return nil
	}
	if e.realMissing {
		return tx.recordBase(fingerprint{Path: rel}) // as takeFingerprint says of a missing path
	}
	if e.layer == layerLower {
		// The lookup's lstat of the real file, a moment ago: the same
		// fingerprint without a second one.
		if fp, ok := fingerprintOf(rel, e.info); ok {
			return tx.recordBase(fp)
		}
	}
	fp, err := takeFingerprint(tx.real(rel), rel)
	if err != nil {
		return err
	}
	return tx.recordBase(fp)
}

// recordBase records fp as the real side of fp.Path, taken earlier (the
// copy fallback's snapshot). The caller holds tx.mu.
func (tx *Tx) recordBase(fp fingerprint) error {
	line, _ := json.Marshal(fp)
	if tx.baseLog == nil {
		f, err := os.OpenFile(filepath.Join(tx.dir, baseName), os.O_WRONLY|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600)
		if err != nil {
			return fmt.Errorf("sandbox: record base: %w", err)
		}
		tx.baseLog = f
	}
	if _, err := tx.baseLog.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("sandbox: record base: %w", err)
	}
	tx.base[fp.Path] = fp
	return nil
}

// closeBase closes the base log when the transaction ends (or is
// decided); a later line, if any, opens it again. The caller holds tx.mu.
func (tx *Tx) closeBase() {
	if tx.baseLog != nil {
		tx.baseLog.Close()
		tx.baseLog = nil
	}
}

// closeBaseWhenDecided closes the base log of a transaction a commit
// decided (or ended); one that stays open keeps it.
func (tx *Tx) closeBaseWhenDecided() {
	if tx.closed {
		tx.closeBase()
	}
}

func loadBase(dir string) (map[string]fingerprint, error) {
	m := map[string]fingerprint{}
	f, err := os.Open(filepath.Join(dir, baseName))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	} else if err != nil {
		return nil, fmt.Errorf("sandbox: load base: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var fp fingerprint
		if json.Unmarshal(sc.Bytes(), &fp) == nil { // a torn last line is dropped
			m[fp.Path] = fp
		}
	}
	return m, sc.Err()
}

// snapshot fingerprints the real side of every change's path, in the
// change set's order: what conflicts compares and an undo must restore.
func (tx *Tx) snapshot(cs ChangeSet) ([]fingerprint, error) {
	out := make([]fingerprint, len(cs.Changes))
	for i, c := range cs.Changes {
		fp, err := takeFingerprint(tx.real(c.Path), c.Path)
		if err != nil {
			return nil, err
		}
		out[i] = fp
	}
	return out, nil
}

// conflicts compares the real side of every change (now, from snapshot)
// with what it was at Begin. Paths with a fingerprint compare exactly;
// others (staged by a child process in the overlay) conflict when their
// ctime is later than the Begin marker's, or when they are gone although
// they existed then (existedAtBegin: a rename's target, which the
// overlay marks with its source's origin, did not). A directory made on
// both sides is no conflict; one whose mode changed and that is gone, or
// changed on the real side, is. The names of a hard-link group share one
// staged inode and so its origin: one of them existed then, and only when
// none is there now was that one deleted.
func (tx *Tx) conflicts(cs ChangeSet, now []fingerprint) []Conflict {
	var out []Conflict
	moved := func(rel string) bool { // rel's copy-up came from another name, still there
		for j, c := range cs.Changes {
			if c.Path != rel && now[j].Exists && originIs(tx.up(rel), tx.real(c.Path)) {
				return true
			}
		}
		return false
	}
	groupThere := map[string]bool{} // a group's first name: some name exists now
	for i, c := range cs.Changes {
		if c.Op == OpWrite && now[i].Exists {
			groupThere[c.Path] = true
			if c.Link != "" {
				groupThere[c.Link] = true
			}
		}
	}
	for i, c := range cs.Changes {
		reason := ""
		switch c.Op {
		case OpMkdir:
			// A directory made on both sides is no conflict. One the
			// child saw as a real directory (not made over a delete,
			// so not opaque) that is now something else is.
			if now[i].Exists && !now[i].isDir() && !isOpaque(tx.up(c.Path)) {
				reason = "replaced since begin"
			}
		case OpChmodDir:
			if reason = tx.compare(c.Path, now[i], moved); reason == "" && !now[i].Exists {
				reason = "deleted since begin"
			}
		default:
			reason = tx.compare(c.Path, now[i], moved)
			_, based := tx.base[c.Path]
			if first := cmp.Or(c.Link, c.Path); c.Op == OpWrite && !based && !now[i].Exists && groupThere[first] {
				reason = "" // another name of the staged file is there: this one is new
			}
		}
		if reason != "" {
			out = append(out, Conflict{Path: c.Path, Reason: reason})
		}
	}
	return out
}

func (tx *Tx) compare(rel string, now fingerprint, moved func(string) bool) string {
	if was, ok := tx.base[rel]; ok {
		switch {
		case was.Exists && !now.Exists:
			return "deleted since begin"
		case !was.Exists && now.Exists:
			return "created since begin"
		case was != now:
			return "changed since begin"
		}
		return ""
	}
	if now.Exists && now.Ctime > tx.meta.BeginCtime {
		return "changed since begin"
	}
	if !now.Exists && tx.existedAtBegin(rel, moved) {
		return "deleted since begin"
	}
	return ""
}

// appendBase records the real side of every change's path as it is now
// as the base later commits compare against: after an undo has put the
// originals back (checked against the state before the commit), which
// changed their ctimes.
func appendBase(dir, root string, changes []Change) error {
	f, err := os.OpenFile(filepath.Join(dir, baseName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: record base: %w", err)
	}
	var buf []byte
	for _, c := range changes {
		fp, err := takeFingerprint(filepath.Join(root, filepath.FromSlash(c.Path)), c.Path)
		if err != nil {
			f.Close()
			return err
		}
		line, _ := json.Marshal(fp)
		buf = append(append(buf, line...), '\n')
	}
	_, err = f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
