package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
)

// AsCaller makes Commit refuse to write over a real file this process
// may not write itself (fs.ErrPermission, naming it, before anything is
// applied; the transaction stays open). A commit puts a staged file in
// place by renaming it over the real one, which the folder's permission
// allows where the file's own does not: an SDK transaction's commit
// replaced a read-only file, and another user's, that a plain write of
// the agent's fails on (as it does in the booth, whose view holds the
// real files' permissions).
func (tx *Tx) AsCaller() {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.asCaller = true
}

// checkCaller refuses a change set that writes over a real file the
// process may not write, when AsCaller was asked.
func (tx *Tx) checkCaller(cs ChangeSet) error {
	if !tx.asCaller {
		return nil
	}
	for _, c := range cs.Changes {
		if c.Op != OpWrite {
			continue
		}
		p := filepath.Join(tx.ws.root, filepath.FromSlash(c.Path))
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue // made anew, or replacing what is no file: the folder's permission holds it
		}
		if !mayWrite(p) {
			return pathErr("commit", c.Path, fs.ErrPermission)
		}
	}
	return nil
}
