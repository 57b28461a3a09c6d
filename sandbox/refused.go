package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// refusedName is the file, in a transaction's state directory, that keeps
// the entries refused while folding a copy's changes into the staging
// area: the copy is gone by the time Diff runs, so they are written down.
// (Entries a child leaves in the kernel overlay's upper directory are
// refused by Diff itself, where they lie.)
const refusedName = "refused.json"

// keepRefusals adds rs to the transaction's kept refusals.
func (tx *Tx) keepRefusals(rs []Refusal) error {
	if len(rs) == 0 {
		return nil
	}
	tx.mu.Lock()
	defer tx.mu.Unlock()
	var old []Refusal
	if err := readJSON(filepath.Join(tx.dir, refusedName), &old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		old = nil // unreadable: rewritten whole below
	}
	return writeJSONAtomic(filepath.Join(tx.dir, refusedName), sortRefusals(append(old, rs...)))
}

// keptRefusals returns the kept refusals that still stand: one is dropped
// once the staging area holds something at its path or has deleted a
// parent of it or put a file there (the agent moved on). A list that cannot be
// read is itself a refusal, so that nothing is silently lost. The caller
// holds tx.mu.
func (tx *Tx) keptRefusals() ([]Refusal, error) {
	var rs []Refusal
	err := readJSON(filepath.Join(tx.dir, refusedName), &rs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return []Refusal{{Path: ".", Kind: RefusedUnreadable,
			Reason: "the list of entries refused while the child ran in a copy could not be read: " + err.Error()}}, nil
	}
	out := rs[:0]
	for _, r := range rs {
		if rel, err := tx.ws.cleanRel("diff", r.Path); err != nil || !tx.refusalStale(rel) {
			out = append(out, r)
		}
	}
	return out, nil
}

// refusalStale reports whether the staging area has since staged rel or
// deleted one of its parents or put a non-directory there.
func (tx *Tx) refusalStale(rel string) bool {
	parts := splitPath(rel)
	for i := range parts {
		fi, err := os.Lstat(tx.up(filepath.Join(parts[:i+1]...)))
		if err != nil {
			continue
		}
		if i == len(parts)-1 || isWhiteout(fi) || !fi.IsDir() {
			return true
		}
	}
	return false
}
