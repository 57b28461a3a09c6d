package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jukebox-os/jukebox/internal/termtext"
)

// RecoverReport says what Recover did.
type RecoverReport struct {
	Committed  []string `json:"committed"`   // decided commits it finished
	RolledBack []string `json:"rolled_back"` // undecided commits it undid
	// Restored lists commits that could not be finished (a step failed
	// for a reason other than a crash): their originals were put back,
	// checked, and the transaction is open again (rolled back, when it
	// had participants).
	Restored []string `json:"restored,omitempty"`
	// Conflicted lists decided commits Recover did not finish because the
	// user changed paths they had yet to write after the interruption:
	// they were undone as Restored says, the user's changes kept.
	Conflicted []RecoverConflict `json:"conflicted,omitempty"`
	// Untrusted lists the journals Recover did not apply, and why.
	Untrusted []UntrustedJournal `json:"untrusted,omitempty"`
}

// RecoverConflict is a decided commit that recovery would have written
// over the user's later changes.
type RecoverConflict struct {
	ID        string     `json:"id"`
	Conflicts []Conflict `json:"conflicts"`
	// Open is true when the transaction is open again; false when it had
	// participants and was rolled back with them.
	Open bool `json:"open"`
}

// RecoverConflictText says what recovery did instead of writing over the
// user's changes, for a person.
func RecoverConflictText(c RecoverConflict) string {
	paths := make([]string, len(c.Conflicts))
	for i, x := range c.Conflicts {
		paths[i] = termtext.Quote(x.Path) + " (" + x.Reason + ")"
	}
	then := "the transaction is open again (jukebox booth diff, then commit or rollback)"
	if !c.Open {
		then = "the transaction was rolled back with its other participants"
	}
	return fmt.Sprintf("the interrupted commit of %s was not finished: you changed %s; what it had applied was undone, your changes kept, and %s",
		c.ID, strings.Join(paths, ", "), then)
}

// UntrustedJournal is a transaction whose journal recovery will never
// apply: written by an earlier release (without a MAC), planted, tampered
// with, or bound to another workspace or transaction. Discard removes it.
type UntrustedJournal struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Recover finishes or undoes every commit that a crash (or a failed
// step) interrupted in the workspace, as its journal says: a decided
// commit is applied again (every step is idempotent) and its
// participants committed, or, if a step fails again, undone with the
// originals it kept; an undecided one has its participants rolled back
// and is dropped. Only journals this user's jukebox wrote for this
// transaction in this workspace are acted on; any other is reported in
// RecoverReport.Untrusted and left alone. Transactions that were merely
// left open are not touched. Call it before using a workspace, from
// commands that change it (never from one that only reads).
// Resolvers finish participants, one per kind (see sandbox/pgtx).
func Recover(ctx context.Context, dir string, opts Options, resolvers ...Resolver) (RecoverReport, error) {
	var rep RecoverReport
	w, err := newWorkspace(dir, opts)
	if err != nil {
		return rep, err
	}
	if _, err := os.Stat(w.stateRoot); errors.Is(err, fs.ErrNotExist) {
		return rep, nil
	}
	lock, err := lockState(w)
	if err != nil {
		return rep, err
	}
	defer lock.release()
	sweepCopies(w) // copy runs' folders left by a killed jukebox
	ents, err := os.ReadDir(w.stateRoot)
	if err != nil {
		return rep, fmt.Errorf("sandbox: recover: %w", err)
	}
	byKind := map[string]Resolver{}
	for _, r := range resolvers {
		byKind[r.Kind()] = r
	}
	keys := &keyRing{opts: opts, w: w}
	var errs []error
	for _, e := range ents {
		err := recoverOne(ctx, w, e, keys, byKind, &rep)
		if isCrash(err) {
			return rep, err
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rep, errors.Join(errs...)
}

func recoverOne(ctx context.Context, w *workspace, e fs.DirEntry, keys *keyRing, byKind map[string]Resolver, rep *RecoverReport) error {
	dir := filepath.Join(w.stateRoot, e.Name())
	if strings.HasPrefix(e.Name(), ".trash-") {
		return removeAll(dir)
	}
	if !e.IsDir() || !validTxName(e.Name()) {
		return nil
	}
	j, ok, untrusted, err := readJournal(w, dir, keys)
	if err != nil || !ok {
		return err
	}
	if untrusted != "" {
		rep.Untrusted = append(rep.Untrusted, UntrustedJournal{ID: e.Name(), Reason: untrusted})
		return nil
	}
	for _, p := range j.Participants {
		if byKind[p.Kind] == nil && p.Kind != rootKind {
			return fmt.Errorf("%w %q (tx %s)", ErrNoResolver, p.Kind, j.TxID)
		}
	}
	resolve := func(commit bool) func(gid string, i int) error {
		return func(gid string, i int) error {
			if p := j.Participants[i]; p.Kind == rootKind {
				return resolveRoot(dir, p, keys.opts, commit)
			}
			return byKind[j.Participants[i].Kind].Resolve(ctx, gid, commit)
		}
	}
	key, err := keys.get()
	if err != nil {
		return err
	}
	run := &commitRun{w: w, dir: dir, key: key, j: j, repeat: true}
	switch j.State {
	case statePrepare:
		for i, p := range j.Participants {
			if err := resolve(false)(p.GID, i); err != nil {
				return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
			}
		}
		rep.RolledBack = append(rep.RolledBack, j.TxID)
		return discard(w, dir)
	case stateUndo:
		return recovered(run.abort(errors.New(j.Error), resolve(false)), j.TxID, dir, rep)
	case stateCommit:
		conflicts, err := run.changedAfterDecision()
		if err != nil {
			return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
		}
		if len(conflicts) > 0 {
			res := run.abort(&ConflictError{Conflicts: conflicts}, resolve(false))
			rep.Conflicted = append(rep.Conflicted, RecoverConflict{ID: j.TxID, Conflicts: conflicts, Open: res.reopened})
			return recovered(res, j.TxID, dir, rep)
		}
		if err := run.forward(); err != nil {
			if isCrash(err) {
				return err
			}
			return recovered(run.abort(err, resolve(false)), j.TxID, dir, rep)
		}
	}
	if err := run.complete(resolve(true)); err != nil {
		return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
	}
	rep.Committed = append(rep.Committed, j.TxID)
	return nil
}

// recovered reports an undo that Recover finished, or why it could not.
func recovered(res undoResult, id, dir string, rep *RecoverReport) error {
	if isCrash(res.undoErr) {
		return res.undoErr
	}
	if res.restored() && (res.reopened || res.dropped) {
		rep.Restored = append(rep.Restored, id)
		return nil
	}
	return res.commitError(id, dir)
}

// changedAfterDecision lists the changes not yet begun (nothing moved
// aside or logged for them) whose path is no longer as it was when the
// commit was decided: the user changed it after the interruption, and
// applying would overwrite that. Their Before becomes what is there now,
// which an undo leaves alone. A folder counts as changed when it is gone
// or replaced (its times change as the commit writes inside it); any
// other path when its inode, size, mode or mtime differ.
func (r *commitRun) changedAfterDecision() ([]Conflict, error) {
	if len(r.j.Before) != len(r.j.Changes) {
		return nil, nil
	}
	a, logged, err := r.applier(false)
	if err != nil {
		return nil, err
	}
	defer a.close()
	var out []Conflict
	for i, c := range r.j.Changes {
		was := r.j.Before[i]
		if c.Implied || !was.Exists || !a.untouched(i, logged) {
			continue
		}
		now, err := takeFingerprint(filepath.Join(r.w.root, filepath.FromSlash(c.Path)), c.Path)
		if err != nil {
			return nil, err
		}
		if reason := changedSinceDecision(was, now); reason != "" {
			r.j.Before[i] = now
			out = append(out, Conflict{Path: c.Path, Reason: reason})
		}
	}
	return out, nil
}

func changedSinceDecision(was, now fingerprint) string {
	switch {
	case !now.Exists:
		return "deleted after the commit was interrupted"
	case was.Ino == 0, was.isDir() && now.isDir() && was.Ino == now.Ino:
		return "" // a journal without the whole fingerprint, or a folder still there
	case was.Ino != now.Ino || was.Size != now.Size || was.Mode != now.Mode || was.Mtime != now.Mtime:
		return "changed after the commit was interrupted"
	}
	return ""
}
