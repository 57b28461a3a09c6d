package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// Commit applies the change set to the real workspace and commits every
// participant, all or nothing:
//
//  1. refuse with a *ConflictError if a staged path changed on the real side;
//  2. flush the staging area (syncfs);
//  3. with participants: journal "prepare", then PREPARE each one;
//  4. journal "commit" — the decision, fsynced before anything is applied;
//  5. apply each change (link + rename, each step idempotent), syncfs;
//  6. COMMIT PREPARED each participant; remove the transaction.
//
// A crash after step 4 is finished by Recover; before it, undone. Commit
// returns the change set it applied.
func (tx *Tx) Commit(ctx context.Context) (ChangeSet, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return ChangeSet{}, err
	}
	lock, err := lockState(tx.ws)
	if err != nil {
		return ChangeSet{}, err
	}
	defer lock.release()
	cs, err := tx.diff()
	if err != nil {
		return ChangeSet{}, err
	}
	conflicts, err := tx.conflicts(cs)
	if err != nil {
		return ChangeSet{}, err
	}
	if len(conflicts) > 0 {
		return cs, &ConflictError{Conflicts: conflicts}
	}
	if err := tx.preflight(cs); err != nil {
		return cs, err
	}
	return cs, tx.commitSet(ctx, cs)
}

func (tx *Tx) commitSet(ctx context.Context, cs ChangeSet) error {
	if err := syncPath(tx.upper); err != nil {
		return fmt.Errorf("sandbox: commit: flush staging: %w", err)
	}
	if err := fail("synced"); err != nil {
		return err
	}
	j := journal{TxID: tx.meta.ID, State: statePrepare, Participants: tx.partRecords()}
	if err := tx.prepareParts(ctx, j); err != nil {
		return err
	}
	j.State, j.Changes = stateCommit, cs.Changes
	if err := writeJournal(tx.dir, j); err != nil {
		return tx.abortPrepared(ctx, err)
	}
	tx.closed = true // decided: from here on only Recover may touch it
	if err := fail("decided"); err != nil {
		return err
	}
	for i := range cs.Changes {
		tx.emit(Event{Kind: EventChange, Change: &cs.Changes[i]})
	}
	done := func(gid string, i int) error { return tx.parts[i].CommitPrepared(ctx, gid) }
	if err := finishCommit(tx.ws, tx.dir, j, false, done); err != nil {
		return err
	}
	tx.emit(Event{Kind: EventCommit})
	return nil
}

// prepareParts journals the participants, then prepares each. A failure
// rolls everything back and closes the transaction.
func (tx *Tx) prepareParts(ctx context.Context, j journal) error {
	if len(tx.parts) == 0 {
		return nil
	}
	if err := writeJournal(tx.dir, j); err != nil {
		return err
	}
	if err := fail("journal-prepare"); err != nil {
		return err
	}
	for i, p := range tx.parts {
		if err := p.Prepare(ctx, tx.gid(i)); err != nil {
			rerr := tx.rollbackParts(ctx, i)
			tx.closed = true
			discard(tx.ws, tx.dir)
			return fmt.Errorf("sandbox: prepare %s: %w (rollback: %v)", p.Kind(), err, rerr)
		}
		if err := fail(fmt.Sprintf("prepared-%d", i)); err != nil {
			return err
		}
	}
	return nil
}

// abortPrepared undoes prepared participants when the decision could not
// be written.
func (tx *Tx) abortPrepared(ctx context.Context, cause error) error {
	rerr := tx.rollbackParts(ctx, len(tx.parts))
	tx.closed = true
	discard(tx.ws, tx.dir)
	return fmt.Errorf("%w (rollback: %v)", cause, rerr)
}

// finishCommit applies a decided journal and finishes its participants.
// Commit and Recover share it; every step may be repeated.
func finishCommit(w *workspace, dir string, j journal, repeat bool, finish func(gid string, i int) error) error {
	a, err := newApplier(w.root, filepath.Join(dir, "upper"))
	if err != nil {
		return err
	}
	a.repeat = repeat
	defer a.close()
	for i, c := range j.Changes {
		if c.Implied {
			continue
		}
		if err := a.apply(i, c); err != nil {
			return err
		}
		if err := fail(fmt.Sprintf("apply-%d", i)); err != nil {
			return err
		}
	}
	if err := syncFS(a.rootFD); err != nil {
		return fmt.Errorf("sandbox: commit: syncfs: %w", err)
	}
	for i, p := range j.Participants {
		if err := finish(p.GID, i); err != nil {
			return fmt.Errorf("sandbox: commit %s: %w", p.Kind, err)
		}
		if err := fail(fmt.Sprintf("committed-%d", i)); err != nil {
			return err
		}
	}
	return discard(w, dir)
}

// preflight opens the real parent of every change the way apply will, so
// that a parent replaced by a symlink is refused before the decision.
func (tx *Tx) preflight(cs ChangeSet) error {
	a, err := newApplier(tx.ws.root, tx.upper)
	if err != nil {
		return err
	}
	defer a.close()
	for _, c := range cs.Changes {
		_, err := a.dirFD(path.Dir(c.Path))
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			return err
		}
	}
	return nil
}

// syncPath flushes the file system holding p.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return syncFS(int(f.Fd()))
}

// Rollback discards everything staged and aborts every participant. The
// real workspace was never touched, so it is left bit-identical.
func (tx *Tx) Rollback(ctx context.Context) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	tx.closed = true
	perr := tx.rollbackParts(ctx, 0)
	if err := discard(tx.ws, tx.dir); err != nil {
		return err
	}
	tx.emit(Event{Kind: EventRollback})
	return perr
}
