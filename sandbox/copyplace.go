package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Where the copy fallback runs a child. Not inside the workspace: from a
// copy at <workspace>/.jukebox/booth/<id>/copy, "../../../.." was the real
// workspace. The copy is <place>/<workspace name>, where place is a
// private folder (mode 0700) made for the run, the first of these that
// can be made:
//
//   - <state root>/<id>/copy, when the booth's state root is outside the
//     workspace and on the same file system (reflinks and renames work);
//   - <workspace's parent>/.jukebox-booth-<id>, a hidden sibling of the
//     workspace, on its file system as a rule;
//   - <temporary folder>/.jukebox-booth-<id>, when the parent cannot be
//     written.
//
// None is inside the workspace, so the workspace is not above the copy
// (a ".." too many does not land in it), but it can be beside it:
// "../../<workspace name>" from the copy's top is the real workspace
// when the copy is its sibling. The copy does not confine: the child can
// write the real workspace that way or by its absolute path (or anything
// else the user can write), and Exec says so once per run.
//
// The run holds a lock (flock) on its place until it has removed it.
// What a killed run leaves is removed by Rollback (discard) and by
// Recover (sweepCopies), which take a place only when its lock is free
// and it holds nothing but a copy named for the workspace.

// copyPrefix begins the name of a copy's folder beside the workspace or
// in the temporary folder; the transaction id follows.
const copyPrefix = ".jukebox-booth-"

// copyPlace is one candidate folder for a run's copy.
type copyPlace struct {
	dir   string
	where string // for messages, without the machine's paths
}

// copyPlaces are the candidate folders for a copy run of transaction id
// whose state directory is txDir, in the order tried.
func copyPlaces(w *workspace, txDir, id string) []copyPlace {
	var out []copyPlace
	if w.stateRel == "" && sameDevice(filepath.Dir(txDir), w.root) {
		out = append(out, copyPlace{filepath.Join(txDir, "copy"), "in the booth's state folder"})
	}
	out = append(out,
		copyPlace{filepath.Join(filepath.Dir(w.root), copyPrefix+id), "beside the workspace"},
		copyPlace{filepath.Join(os.TempDir(), copyPrefix+id), "in the temporary folder"})
	keep := out[:0]
	for _, p := range out {
		if !insideResolved(w.root, p.dir) {
			keep = append(keep, p)
		}
	}
	return keep
}

// insideResolved reports whether dir, its folder's symlinks evaluated, is
// root or inside it.
func insideResolved(root, dir string) bool {
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		parent = filepath.Dir(dir)
	}
	return Within(filepath.Join(parent, filepath.Base(dir)), root)
}

// makePlace makes a run's folder and locks it. A folder or file already
// there is not used (a leftover is swept, anything else is not ours).
func makePlace(p copyPlace) (*os.File, error) {
	for try := 0; ; try++ {
		err := os.Mkdir(p.dir, 0o700)
		if err == nil {
			lock, lerr := lockPlace(p.dir)
			if !errors.Is(lerr, errPlaceBusy) {
				if lerr != nil {
					os.Remove(p.dir)
				}
				return lock, lerr
			}
			// A sweep took the new folder in the instant before the lock:
			// it removes it; make it again.
			err = fs.ErrExist
		}
		if !errors.Is(err, fs.ErrExist) || try >= 50 {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// placeErr describes a failure to make the copy's folder without naming
// the machine's paths.
func placeErr(p copyPlace, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("cannot make the copy's folder %s %s: %w", filepath.Base(p.dir), p.where, err)
}

// unwritable reports whether err says the folder cannot be written there,
// so that the next place may be tried.
func unwritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EDQUOT)
}

// validTxID reports whether s has the form newTxID gives.
func validTxID(s string) bool {
	hex, ok := strings.CutPrefix(s, "tx-")
	if !ok || len(hex) != 24 {
		return false
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// sweepCopies removes the copies runs in this workspace left behind when
// jukebox was killed: every copy folder beside the workspace, in the
// temporary folder or in a transaction's state folder whose lock is free
// and which holds nothing but a copy named for this workspace.
func sweepCopies(w *workspace) {
	base := filepath.Base(w.root)
	for _, dir := range []string{filepath.Dir(w.root), os.TempDir()} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if id, ok := strings.CutPrefix(e.Name(), copyPrefix); ok && validTxID(id) {
				removePlace(w, filepath.Join(dir, e.Name()), base)
			}
		}
	}
	ents, _ := os.ReadDir(w.stateRoot)
	for _, e := range ents {
		if validTxID(e.Name()) {
			removePlace(w, filepath.Join(w.stateRoot, e.Name(), "copy"), base)
		}
	}
}

// removeCopies removes what a copy run of transaction id left, as
// sweepCopies does; Rollback's discard calls it.
func removeCopies(w *workspace, id string) {
	if !validTxID(id) {
		return
	}
	base := filepath.Base(w.root)
	for _, p := range copyPlaces(w, filepath.Join(w.stateRoot, id), id) {
		removePlace(w, p.dir, base)
	}
}

// removePlace removes the copy folder dir if it is a folder (not a link),
// not inside the workspace, no run holds it, and it holds nothing but
// base.
func removePlace(w *workspace, dir, base string) {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || insideResolved(w.root, dir) {
		return
	}
	lock, err := lockPlace(dir)
	if err != nil {
		return
	}
	defer lock.Close()
	names, err := lock.Readdirnames(-1)
	if err != nil || len(names) > 1 || len(names) == 1 && names[0] != base {
		return
	}
	removeAll(dir)
}
