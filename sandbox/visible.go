package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// hidden are the folders a booth over w hides from the agent: its state
// (staging areas, journals), the journal key's folder (an agent that
// read the key could forge a journal for a later run) and jukebox's
// cache folder (compiled WASI tools that jukebox runs, the roots it
// trusts, the tapes it read from a store).
func hidden(w *workspace, opts Options) []string {
	var out []string
	if w.stateRel != "" {
		out = append(out, w.stateRoot)
	}
	for _, dir := range ownFolders(opts) {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() && !slices.Contains(out, dir) {
			out = append(out, dir)
		}
	}
	return out
}

// ownFolders are the folders outside any workspace whose content jukebox
// trusts (absolute, there or not): the journal key's, the default key's
// too (with XDG_STATE_HOME or --key-file naming another, the key every
// run without them uses was readable to the agent), and its cache
// folders (jukebox in the user's cache folder, JUKEBOX_WASM_CACHE_DIR,
// JUKEBOX_CACHE_DIR: a store's tapes and the notes that they verified).
// An agent that could write one could plant what a later jukebox runs
// or believes outside the booth.
func ownFolders(opts Options) []string {
	var out []string
	if key, err := KeyFile(opts); err == nil {
		out = append(out, filepath.Dir(key))
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		out = append(out, filepath.Join(home, ".local", "state", "jukebox"))
	}
	if base, err := os.UserCacheDir(); err == nil && filepath.IsAbs(base) {
		out = append(out, filepath.Join(base, "jukebox"))
	}
	for _, d := range []string{wasmCacheDir(), os.Getenv("JUKEBOX_CACHE_DIR")} { // JUKEBOX_CACHE_DIR: tapes read from a store
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil && !slices.ContainsFunc(out, func(o string) bool { return Within(abs, o) }) {
			out = append(out, abs)
		}
	}
	for i, d := range out {
		out[i] = filepath.Clean(d)
	}
	return out
}

// CheckWriteLive says why dir, absolute and clean, cannot be written live
// by the agent of a booth over the workspace ws, or nil: it is a place
// the booth gives the agent its own of (/, /tmp, /dev/shm, /run, or
// anything under /proc, /dev or /sys), lies in a folder the booth hides
// (its state, the journal key's folder, jukebox's cache), or holds one of
// jukebox's own folders (ownFolders): the booth hides it, but an agent
// that may write around it renames it away and makes another in its
// place. Commands call it before they start, to refuse the flag with its
// name.
func CheckWriteLive(ws, dir string, opts Options) error {
	w, err := newWorkspace(ws, opts)
	if err != nil {
		return err
	}
	hide := hidden(w, opts)
	if key, err := KeyFile(opts); err == nil {
		hide = append(hide, filepath.Dir(key)) // hidden once a booth has made it
	}
	if err := nsinit.VisibleError(dir, hide); err != nil {
		return err
	}
	for _, own := range ownFolders(opts) {
		if Within(own, dir) {
			return fmt.Errorf("holds %s, jukebox's own (the booth's key, or the tools and roots it keeps), which the agent could "+
				"then replace for a later run: name the folders in it the agent may write", own)
		}
	}
	return nil
}

// Protected are the workspace paths (relative, slash-separated) that a run
// of tx with ExecOptions.Protect files keeps read-only for its child
// (protected, for those in the workspace): what a change staged from
// outside the child (an SDK transaction) may not touch either.
func (tx *Tx) Protected(files []string) []string {
	var out []string
	for _, p := range protected(tx.ws.root, files, hidden(tx.ws, tx.opts)) {
		if p == tx.ws.root || !Within(p, tx.ws.root) {
			continue // outside the workspace: nothing of it is staged
		}
		if rel, err := filepath.Rel(tx.ws.root, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out
}

// Keep makes Commit refuse a change set that changes one of files
// (absolute paths), or what Protected keeps of them (their folder, as a
// booth run keeps it from its agent), or replaces a folder holding one:
// ErrKept, naming the path, before anything is applied (the transaction
// stays open). For an SDK transaction outside the booth: its commit
// overwrote, or deleted, the tape that recorded it.
func (tx *Tx) Keep(files []string) {
	kept := tx.Protected(files)
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.kept = kept
}

// checkKept refuses a change set that changes what Keep keeps.
func (tx *Tx) checkKept(cs ChangeSet) error {
	for _, c := range cs.Changes {
		for _, k := range tx.kept {
			// A folder made, or its mode changed, above a kept path
			// leaves what it holds; anything else there replaces it.
			if c.Path == k || strings.HasPrefix(c.Path, k+"/") ||
				strings.HasPrefix(k, c.Path+"/") && c.Op != OpMkdir && c.Op != OpChmodDir {
				return pathErr("commit", c.Path, ErrKept)
			}
		}
	}
	return nil
}

// protected are the paths to keep read-only so that files that must not
// change (the tape being recorded) do not, given the folders the booth
// hides: each file's folder, so that nothing is planted beside it, or the
// file alone when its folder is the workspace or holds it (it would cover
// the overlay) or is a place the booth gives the agent its own of (/tmp,
// say). A file the agent cannot see at all (in a hidden folder, or under
// /dev or /proc) needs nothing; nor does the workspace or a folder
// holding it, which is never made read-only.
func protected(ws string, files, hide []string) []string {
	var out []string
	for _, f := range files {
		dir := filepath.Dir(f)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		f = filepath.Join(dir, filepath.Base(f))
		switch {
		case Within(ws, f):
			// the workspace itself, or a folder holding it
		case nsinit.VisibleError(f, hide) != nil:
			// the agent sees its own there, or nothing
		case Within(ws, dir) || nsinit.VisibleError(dir, hide) != nil:
			out = append(out, f)
		default:
			out = append(out, dir)
		}
	}
	return out
}
