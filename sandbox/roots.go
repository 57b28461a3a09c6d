package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// Staged roots are folders outside the workspace that the booth stages
// too (record --allow-write: ~/.cache, say). Each is a transaction of its
// own over that folder, a sub-transaction whose state lives in the
// workspace transaction's directory (roots/N/<id>/), so that the
// workspace's state covers it, and which takes part in the workspace
// transaction's commit as a participant of kind "files":
//
//   - before anything is prepared, it is checked for conflicts with the
//     real side, as the workspace is, and a conflict leaves the whole
//     transaction open;
//   - Prepare journals its change set undecided (state "vote");
//   - after the workspace's decision, CommitPrepared applies it as a
//     commit does, each original moved aside first, every step logged;
//   - RollbackPrepared drops it; nothing of it was applied.
//
// Recover resolves it from the workspace's journal like any participant
// (the journal's record names its state directory), so a crash at any
// point leaves all the roots and the workspace committed, or none. Exec
// mounts an overlay over each root as over the workspace; the copy
// fallback cannot stage them and refuses.

// rootKind is the participant kind of a staged root.
const rootKind = "files"

// stateVote is a staged root's journal once prepared: its change set,
// awaiting the workspace transaction's decision.
const stateVote = "vote"

// rootRef is how tx.json names a staged root: its real path and its
// sub-transaction's id (in roots/N/, N its index).
type rootRef struct {
	Path string `json:"path"`
	ID   string `json:"id"`
}

// rootPart is a staged root as a participant of its workspace transaction.
type rootPart struct {
	sub *Tx
	ref string // its directory, relative to the workspace transaction's
}

// StageRoot stages the folder at path with the transaction: Exec mounts
// it copy-on-write as it does the workspace, Roots lists it, and it
// commits and rolls back with the workspace, as one. path must exist, be
// a folder and lie outside the workspace and its state; a symlink is
// refused. Call it before Exec.
func (tx *Tx) StageRoot(path string) (*Tx, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("sandbox: staged root: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, fmt.Errorf("sandbox: staged root %s is a symlink: name the folder it points to", path)
	case !fi.IsDir():
		return nil, fmt.Errorf("sandbox: staged root %s is not a folder", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("sandbox: staged root: %w", err)
	}
	if Within(real, tx.ws.root) || Within(tx.ws.root, real) {
		return nil, fmt.Errorf("sandbox: staged root %s overlaps the workspace %s", real, tx.ws.root)
	}
	for _, r := range tx.meta.Roots {
		if Within(real, r.Path) || Within(r.Path, real) {
			return nil, fmt.Errorf("sandbox: staged root %s overlaps the staged root %s", real, r.Path)
		}
	}
	n := len(tx.meta.Roots)
	sub, err := begin(real, Options{StateRoot: filepath.Join(tx.dir, "roots", strconv.Itoa(n)), KeyFile: tx.opts.KeyFile})
	if err != nil {
		return nil, err
	}
	tx.meta.Roots = append(tx.meta.Roots, rootRef{Path: sub.ws.root, ID: sub.meta.ID})
	if err := tx.writeMeta(); err != nil {
		sub.Rollback(context.Background())
		tx.meta.Roots = tx.meta.Roots[:n]
		return nil, fmt.Errorf("sandbox: staged root: %w", err)
	}
	tx.parts = append(tx.parts, &rootPart{sub: sub, ref: filepath.Join("roots", strconv.Itoa(n), sub.meta.ID)})
	return sub, nil
}

// Roots are the staged roots' transactions, in the order they were
// staged: Diff one for its change set, Root for its path.
func (tx *Tx) Roots() []*Tx {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	var out []*Tx
	for _, p := range tx.parts {
		if r, ok := p.(*rootPart); ok {
			out = append(out, r.sub)
		}
	}
	return out
}

// Root is the real path of the folder the transaction stages: the
// workspace, or a staged root.
func (tx *Tx) Root() string { return tx.ws.root }

// openRoots joins the staged roots tx.json names, when a transaction left
// open is opened again.
func (tx *Tx) openRoots() error {
	for i, r := range tx.meta.Roots {
		sub, err := open(r.Path, r.ID, Options{StateRoot: filepath.Join(tx.dir, "roots", strconv.Itoa(i)), KeyFile: tx.opts.KeyFile})
		if err != nil {
			return fmt.Errorf("sandbox: staged root %s: %w", r.Path, err)
		}
		tx.parts = append(tx.parts, &rootPart{sub: sub, ref: filepath.Join("roots", strconv.Itoa(i), r.ID)})
	}
	return nil
}

// Kind returns "files".
func (p *rootPart) Kind() string { return rootKind }

// check is the root's conflict check, before anything is prepared: paths
// are absolute, so the user sees which root.
func (p *rootPart) check() error {
	sub := p.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if err := sub.checkOpen(); err != nil {
		return err
	}
	cs, err := sub.diff()
	if err != nil {
		return err
	}
	if len(cs.Refused) > 0 {
		return fmt.Errorf("sandbox: staged root %s holds %s the booth cannot commit (%s: %s)", sub.ws.root,
			termtext.Count(len(cs.Refused), "entry", "entries"), cs.Refused[0].Path, cs.Refused[0].Reason)
	}
	before, err := sub.snapshot(cs)
	if err != nil {
		return err
	}
	if conflicts := sub.conflicts(cs, before); len(conflicts) > 0 {
		for i := range conflicts {
			conflicts[i].Path = filepath.Join(sub.ws.root, conflicts[i].Path)
		}
		return &ConflictError{Conflicts: conflicts}
	}
	return sub.preflight(cs)
}

// Prepare journals the root's change set, undecided.
func (p *rootPart) Prepare(ctx context.Context, gid string) error {
	sub := p.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if err := sub.checkOpen(); err != nil {
		return err
	}
	key, err := loadKey(sub.opts, sub.ws, true)
	if err != nil {
		return err
	}
	cs, err := sub.diff()
	if err != nil {
		return err
	}
	before, err := sub.snapshot(cs)
	if err != nil {
		return err
	}
	if err := syncPath(sub.upper); err != nil {
		return fmt.Errorf("sandbox: flush staging of %s: %w", sub.ws.root, err)
	}
	j := journal{State: stateVote, Changes: cs.Changes, Before: before, DirTimes: cs.DirTimes}
	if err := writeJournal(sub.ws, sub.dir, key, j); err != nil {
		return err
	}
	sub.closed = true // its journal says what happens now
	sub.closeBase()
	return nil
}

// unprepare takes back a vote no decision followed: the root's journal
// goes and its transaction is open again, its staging whole.
func (p *rootPart) unprepare() error {
	sub := p.sub
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if err := removeJournal(sub.dir); err != nil {
		return err
	}
	sub.closed = false
	return nil
}

// CommitPrepared applies the root's change set.
func (p *rootPart) CommitPrepared(ctx context.Context, gid string) error {
	return settleRoot(p.sub.ws, p.sub.dir, p.sub.opts, true, false)
}

// RollbackPrepared drops the root's change set: none of it was applied.
func (p *rootPart) RollbackPrepared(ctx context.Context, gid string) error {
	return settleRoot(p.sub.ws, p.sub.dir, p.sub.opts, false, false)
}

// Rollback discards the root's staging.
func (p *rootPart) Rollback(ctx context.Context) error {
	if p.sub.Closed() {
		return settleRoot(p.sub.ws, p.sub.dir, p.sub.opts, false, false)
	}
	return p.sub.Rollback(ctx)
}

// settleRoot carries a prepared root through the workspace's decision:
// applied (commit), or dropped. recovering says a crash may have done
// some of it already. An apply that fails for a reason other than a crash
// is undone, with the originals it kept, and reported.
func settleRoot(w *workspace, dir string, opts Options, commit, recovering bool) error {
	keys := &keyRing{opts: opts, w: w}
	j, found, untrusted, err := readJournal(w, dir, keys)
	switch {
	case err != nil:
		return err
	case untrusted != "":
		return fmt.Errorf("sandbox: staged root %s: %s", w.root, untrusted)
	case !found:
		if commit {
			return fmt.Errorf("sandbox: staged root %s: no prepared change set to commit", w.root)
		}
		return discard(w, dir) // never prepared: its staging goes
	}
	key, err := keys.get()
	if err != nil {
		return err
	}
	run := &commitRun{w: w, dir: dir, key: key, j: j, repeat: recovering}
	if !commit {
		if j.State == stateVote {
			return discard(w, dir)
		}
		// Applied in part (a crash mid-commit that the workspace's
		// journal undoes): the originals go back.
		res := run.abort(errors.New("the workspace's commit was undone"), nil)
		if res.undoErr != nil || res.partErr != nil {
			return res.commitError(j.TxID, dir)
		}
		return discard(w, dir)
	}
	if j.State == stateVote {
		run.j.State = stateCommit
		if err := writeJournal(w, dir, key, run.j); err != nil {
			return err
		}
		if err := fail("root-decided"); err != nil {
			return err
		}
	}
	if j.State != stateApplied {
		if err := run.forward(); err != nil {
			if isCrash(err) {
				return err
			}
			res := run.abort(err, nil)
			return fmt.Errorf("sandbox: staged root %s: %w", w.root, res.commitError(j.TxID, dir))
		}
	}
	return run.complete(nil)
}

// resolveRoot settles a staged root that a crash left, from the record of
// the workspace transaction (in dir) that names it. opts are Recover's
// (the key file).
func resolveRoot(dir string, p partRecord, opts Options, commit bool) error {
	parts := strings.Split(filepath.ToSlash(p.Ref), "/")
	if len(parts) != 3 || parts[0] != "roots" || !validTxName(parts[2]) {
		return fmt.Errorf("sandbox: staged root record %q: not roots/N/ID", p.Ref)
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return fmt.Errorf("sandbox: staged root record %q: not roots/N/ID", p.Ref)
	}
	subDir := filepath.Join(dir, filepath.FromSlash(p.Ref))
	sopts := Options{StateRoot: filepath.Dir(subDir), KeyFile: opts.KeyFile}
	// tx.json names the root; it is trusted only once it verifies as
	// signed and bound to that root.
	claimed, err := readMetaClaim(subDir)
	if errors.Is(err, os.ErrNotExist) {
		// Gone: settled before the crash (its directory goes last, once
		// every change is applied, or once it is dropped).
		return nil
	}
	if err != nil {
		return fmt.Errorf("sandbox: staged root %s: %w", p.Ref, err)
	}
	sw, err := newWorkspace(claimed, sopts)
	if err != nil {
		return fmt.Errorf("sandbox: staged root %s: %w", claimed, err)
	}
	if _, untrusted, err := readMeta(sw, subDir, &keyRing{opts: sopts, w: sw}); err != nil {
		return err
	} else if untrusted != "" {
		return fmt.Errorf("sandbox: staged root %s: %s", claimed, untrusted)
	}
	return settleRoot(sw, subDir, sopts, commit, true)
}

// readMetaClaim is the workspace a tx.json claims, unverified.
func readMetaClaim(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, txName))
	if err != nil {
		return "", err
	}
	var f journalFile
	var m txMeta
	if err := json.Unmarshal(data, &f); err != nil {
		return "", err
	}
	if err := json.Unmarshal(f.Body, &m); err != nil || m.Workspace == "" {
		return "", fmt.Errorf("tx.json names no workspace")
	}
	return m.Workspace, nil
}
