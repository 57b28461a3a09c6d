package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	// Untrusted lists the journals Recover did not apply, and why.
	Untrusted []UntrustedJournal `json:"untrusted,omitempty"`
	// Running lists the commits a running process is making (ErrInUse):
	// not interrupted, left to it.
	Running []string `json:"running,omitempty"`
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
// and is dropped. A decided commit whose paths the user changed since
// (neither as the journal found them nor as applying leaves them) is
// left alone, journal and all, and reported as a *ConflictError; so is
// one whose undo a crash interrupted. Only journals this user's jukebox wrote for this
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
	if inUse(dir) {
		rep.Running = append(rep.Running, e.Name())
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
	case stateUndo, stateCommit:
		// The user may have changed the real side since the crash:
		// what they wrote is never applied over, nor undone.
		conflicts, err := run.realChanged()
		if err != nil {
			return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
		}
		if len(conflicts) > 0 {
			return recoverConflict(j.TxID, conflicts)
		}
		if j.State == stateUndo {
			return recovered(run.abort(errors.New(j.Error), resolve(false)), j.TxID, dir, rep)
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

// recoverConflict is the error of a decided commit that Recover left
// alone because the real side changed after the crash.
func recoverConflict(id string, conflicts []Conflict) error {
	// "As they were" is the file the journal saw, its size and its
	// modification time: content written back alone still differs, and
	// the message said nothing of it (a user restored the bytes and was
	// refused again).
	return fmt.Errorf("sandbox: recover %s: %w; nothing was applied or undone and its journal is kept: put those paths back as they were "+
		"(the same file, of the same size and modification time: writing the old content back is not enough; edit it in place and restore its time with touch -d), "+
		"then jukebox booth recover (or jukebox booth discard %s keeps the workspace as it is, the commit half applied)",
		id, &ConflictError{Conflicts: conflicts}, id)
}
