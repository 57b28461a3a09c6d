package sandbox

import (
	"context"
	"errors"
	"fmt"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Commit applies the change set to the real workspace and commits every
// participant, all or nothing, whatever fails:
//
//  1. refuse with a *ConflictError if a staged path changed on the real side;
//  2. flush the staging area (syncfs);
//  3. with participants: journal "prepare", then PREPARE each one;
//  4. journal "commit" — the decision, fsynced before anything is applied;
//  5. apply each change (link + rename), moving whatever stood at its
//     path aside into the transaction's directory first; syncfs;
//  6. with participants: journal "applied", then COMMIT PREPARED each;
//  7. remove the transaction, and with it the originals kept aside.
//
// When a step of 5 fails (EACCES, ENOSPC, an immutable directory, ...)
// the originals are put back, the participants rolled back, and Commit
// returns a *CommitError that names the path and the cause and says
// whether the workspace was restored (checked path by path against the
// state before step 4). The transaction is then open again, to commit
// later or roll back — unless it had participants, whose work is gone
// with the rollback: then it is closed. A crash after 4 is finished by
// Recover (or undone, when a step keeps failing); before it, undone.
// Commit returns the change set it applied. It returns with nothing of
// the transaction left running: the names read at Begin are waited for
// on every path, a refused commit's too.
func (tx *Tx) Commit(ctx context.Context) (_ ChangeSet, err error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	defer func() {
		if isCrash(err) {
			tx.releaseOwner() // a crash (fault injection) ends the process
		}
		tx.releaseOwnerWhenDecided()
	}()
	defer tx.begin.wait()
	defer tx.closeBaseWhenDecided()
	if err := tx.checkOpen(); err != nil {
		return ChangeSet{}, err
	}
	if err := tx.checkState(); err != nil {
		return ChangeSet{}, err
	}
	if err := tx.checkLive(); err != nil {
		return ChangeSet{}, err
	}
	if err := tx.checkHeld(); err != nil {
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
	if tx.opts.Whole && len(cs.Refused) > 0 {
		return cs, &RefusedError{Refused: cs.Refused}
	}
	if err := tx.checkKept(cs); err != nil {
		return cs, err
	}
	if err := tx.checkCaller(cs); err != nil {
		return cs, err
	}
	before, err := tx.snapshot(cs)
	if err != nil {
		return ChangeSet{}, err
	}
	if conflicts := tx.conflicts(cs, before); len(conflicts) > 0 {
		return cs, &ConflictError{Conflicts: conflicts}
	}
	if err := tx.preflight(cs); err != nil {
		return cs, err
	}
	for _, p := range tx.parts {
		// Staged roots are checked as the workspace is, before anything
		// is prepared: a conflict there leaves the transaction open too.
		if r, ok := p.(*rootPart); ok {
			if err := r.check(); err != nil {
				return cs, err
			}
		}
	}
	tx.begin.wait() // nothing reads the workspace while it is written
	return cs, tx.commitSet(ctx, cs, before)
}

// Closed reports whether the transaction is finished: committed, rolled
// back, or handed to Recover by a commit that could not finish. A Commit
// that failed before applying anything (a conflict, a refused path), or
// whose changes were undone, leaves it open.
func (tx *Tx) Closed() bool {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.closed
}

func (tx *Tx) commitSet(ctx context.Context, cs ChangeSet, before []fingerprint) error {
	key, err := loadKey(tx.opts, tx.ws, true)
	if err != nil {
		return err
	}
	if err := syncPath(tx.upper); err != nil {
		return fmt.Errorf("sandbox: commit: flush staging: %w", err)
	}
	if err := fail("synced"); err != nil {
		return err
	}
	j := journal{State: statePrepare, Participants: tx.partRecords()}
	if err := tx.prepareParts(ctx, key, j); err != nil {
		return err
	}
	j.State, j.Changes, j.Before, j.DirTimes = stateCommit, cs.Changes, before, cs.DirTimes
	if err := writeJournal(tx.ws, tx.dir, key, j); err != nil {
		if isCrash(err) {
			return err // as a crash would: the "prepare" journal is Recover's
		}
		return tx.abortPrepared(ctx, err)
	}
	tx.closed = true // decided: from here on the journal says what happens
	if err := fail("decided"); err != nil {
		return err
	}
	for i := range cs.Changes {
		tx.emit(Event{Kind: EventChange, Change: &cs.Changes[i]})
	}
	run := &commitRun{w: tx.ws, dir: tx.dir, key: key, j: j}
	if err := run.forward(); err != nil {
		if isCrash(err) {
			return err
		}
		rollback := func(gid string, i int) error { return tx.parts[i].RollbackPrepared(ctx, gid) }
		return tx.afterUndo(run.abort(err, rollback))
	}
	done := func(gid string, i int) error { return tx.parts[i].CommitPrepared(ctx, gid) }
	if err := run.complete(done); err != nil {
		return err
	}
	tx.emit(Event{Kind: EventCommit})
	return nil
}

// afterUndo reopens the transaction when its commit was undone, and turns
// the outcome into the error Commit returns.
func (tx *Tx) afterUndo(res undoResult) error {
	if isCrash(res.undoErr) {
		return res.undoErr
	}
	if res.reopened {
		tx.closed = false
		if base, err := loadBase(tx.dir); err == nil {
			tx.base = base
		}
	}
	return res.commitError(tx.meta.ID, tx.dir)
}

// prepareParts journals the participants, then prepares each. A failure
// rolls everything back and closes the transaction.
func (tx *Tx) prepareParts(ctx context.Context, key []byte, j journal) error {
	if len(tx.parts) == 0 {
		return nil
	}
	if err := writeJournal(tx.ws, tx.dir, key, j); err != nil {
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
			if rerr != nil {
				return fmt.Errorf("sandbox: prepare %s: %w (rollback: %v)", p.Kind(), err, rerr)
			}
			return fmt.Errorf("sandbox: prepare %s: %w (rolled back)", p.Kind(), err)
		}
		if err := fail(fmt.Sprintf("prepared-%d", i)); err != nil {
			return err
		}
	}
	return nil
}

func isCrash(err error) bool { return errors.Is(err, ErrCrash) }

// commitRun carries a decided journal through to its end, forward or
// back. Commit and Recover share it; every step may be repeated.
type commitRun struct {
	w      *workspace
	dir    string // the transaction's state directory
	key    []byte
	j      journal
	repeat bool // recovering: steps may already be done
}

// applier opens the workspace and the aside directory. A first attempt
// starts from an empty aside directory: originals an earlier attempt
// left there are never overwritten.
func (r *commitRun) applier(create bool) (*applier, entryMap, error) {
	if create && !r.repeat {
		aside := filepath.Join(r.dir, "aside")
		if ents, err := os.ReadDir(aside); err == nil {
			for _, e := range ents {
				if e.Name() != "log" {
					return nil, nil, fmt.Errorf("sandbox: commit: %s still keeps originals of an earlier attempt: jukebox booth recover", aside)
				}
			}
			if err := removeAll(aside); err != nil {
				return nil, nil, fmt.Errorf("sandbox: commit: %w", err)
			}
		}
	}
	a, err := newApplier(r.w.root, filepath.Join(r.dir, "upper"))
	if err != nil {
		return nil, nil, err
	}
	a.repeat = r.repeat
	a.dirTimes = r.j.DirTimes
	logged, err := a.openAside(r.dir, create)
	if err != nil {
		a.close()
		return nil, nil, err
	}
	return a, logged, nil
}

// forward applies every change. With participants, or with originals
// kept inside the workspace, it then journals "applied": from there on
// nothing is undone.
func (r *commitRun) forward() error {
	a, logged, err := r.applier(true)
	if err != nil {
		return err
	}
	defer a.close()
	if err := a.forward(r.j.Changes, logged, r.j.Before); err != nil {
		return err
	}
	if len(r.j.Participants) == 0 && !a.usedSib() {
		return nil
	}
	r.j.State = stateApplied
	if err := writeJournal(r.w, r.dir, r.key, r.j); err != nil {
		return err
	}
	return fail("applied")
}

// complete commits the participants (finish), removes originals kept
// beside themselves, and removes the transaction.
func (r *commitRun) complete(finish func(gid string, i int) error) error {
	for i, p := range r.j.Participants {
		if err := finish(p.GID, i); err != nil {
			return fmt.Errorf("sandbox: commit %s: %w", p.Kind, err)
		}
		if err := fail(fmt.Sprintf("committed-%d", i)); err != nil {
			return err
		}
	}
	if r.j.State == stateApplied {
		a, _, err := r.applier(false)
		if err != nil {
			return err
		}
		err = a.cleanup(r.j.Changes)
		a.close()
		if err != nil {
			return err
		}
	}
	return discard(r.w, r.dir)
}

// undoResult is what abort did.
type undoResult struct {
	cause    error    // why applying failed
	undoErr  error    // why putting the originals back failed
	differ   []string // paths not as they were before the commit
	partErr  error    // a participant that could not be rolled back
	reopened bool     // the transaction is open again
	dropped  bool     // the transaction had participants: rolled back
}

// abort journals "undo", puts every original back, checks the result
// against the state before the commit and rolls the participants back
// (rollback). Then the transaction is open again, or dropped when it had
// participants. Whatever fails leaves the journal for Recover.
func (r *commitRun) abort(cause error, rollback func(gid string, i int) error) undoResult {
	res := undoResult{cause: cause}
	r.j.State, r.j.Error = stateUndo, cause.Error()
	writeJournal(r.w, r.dir, r.key, r.j) // best effort: a "commit" journal finishes instead
	if err := fail("undo-journal"); err != nil {
		res.undoErr = err
		return res
	}
	a, logged, err := r.applier(false)
	if err == nil {
		err = a.undo(r.j.Changes, logged)
		a.close()
	}
	if err != nil {
		res.undoErr = err
		return res
	}
	res.differ = verify(r.w.root, r.j.Changes, r.j.Before)
	for i, p := range r.j.Participants {
		if err := rollback(p.GID, i); err != nil && res.partErr == nil {
			res.partErr = fmt.Errorf("sandbox: rollback %s: %w", p.Kind, err)
		}
	}
	if res.partErr != nil {
		return res // Recover tries the participants again
	}
	// Every original is back; aside/ holds the log alone. It must go
	// before the transaction is open again: a later attempt starts afresh.
	if err := removeAll(filepath.Join(r.dir, "aside")); err != nil {
		res.undoErr = err
		return res
	}
	if len(r.j.Participants) > 0 {
		res.dropped = discard(r.w, r.dir) == nil
		return res
	}
	// The restore renamed paths back (new ctimes): what the real side
	// looks like now is the base a later commit compares against. The
	// journal vouches for the transaction: its tx.json is signed again
	// (one an earlier release begun would not be).
	if err := appendBase(r.dir, r.w.root, r.j.Changes); err == nil && resignMeta(r.w, r.dir, r.key) == nil {
		res.reopened = removeJournal(r.dir) == nil
	}
	return res
}

// restored reports whether the workspace is, path by path, as it was
// before the commit.
func (res undoResult) restored() bool { return res.undoErr == nil && len(res.differ) == 0 }

func (res undoResult) commitError(txID, dir string) *CommitError {
	e := &CommitError{TxID: txID, Err: res.cause, Restored: res.restored(), Differ: res.differ,
		UndoErr: res.undoErr, PartErr: res.partErr, Open: res.reopened, RolledBack: res.dropped}
	var pe *PathError
	if errors.As(res.cause, &pe) {
		e.Path = pe.Path
	}
	if res.undoErr != nil {
		e.StateDir = dir
	}
	return e
}

// CommitError is a commit that failed while applying its changes. The
// cause names the path; whatever had been applied was undone.
type CommitError struct {
	TxID string
	Path string // the path whose change failed ("" if none did)
	Err  error  // the cause: EACCES, ENOSPC, EPERM, ...
	// Restored is true when every path the commit touched was checked to
	// be as it was before the commit (kind, inode, mode, size, mtime).
	Restored bool
	Differ   []string // paths the originals were put back at but that differ
	UndoErr  error    // why the originals could not all be put back
	PartErr  error    // a participant that could not be rolled back
	// Open is true when the transaction is open again (commit it later,
	// or roll it back); RolledBack when it had participants and was
	// rolled back with them. When neither, its journal is left for
	// Recover (jukebox booth recover), with the originals in StateDir.
	Open       bool
	RolledBack bool
	StateDir   string
}

// Error says what failed and what the workspace is like now.
func (e *CommitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox: commit %s failed: %v; ", e.TxID, e.Err)
	switch {
	case e.Restored:
		b.WriteString("the workspace was restored")
	case e.UndoErr != nil:
		fmt.Fprintf(&b, "the workspace could not be restored (%v): the originals are kept in %s; jukebox booth recover tries again", e.UndoErr, e.StateDir)
	default:
		fmt.Fprintf(&b, "the originals were put back, but %s differ from before the commit (changed meanwhile?): %s", termtext.Count(len(e.Differ), "path", "paths"), strings.Join(e.Differ, ", "))
	}
	switch {
	case e.PartErr != nil:
		fmt.Fprintf(&b, "; %v (jukebox booth recover tries again)", e.PartErr)
	case e.Open:
		b.WriteString("; the transaction stays open")
	case e.RolledBack:
		b.WriteString("; the transaction was rolled back with its participants")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *CommitError) Unwrap() error { return e.Err }

// preflight opens the real parent of every change the way apply will, so
// that a parent replaced by a symlink is refused before the decision.
// Parents the change set itself makes (a file or a symlink replaced by a
// directory) are not there yet and need no check.
func (tx *Tx) preflight(cs ChangeSet) error {
	made := map[string]bool{}
	for _, c := range cs.Changes {
		if c.Op == OpReplaceDir || c.Op == OpMkdir && isOpaque(tx.up(c.Path)) {
			made[c.Path] = true
		}
	}
	a, err := newApplier(tx.ws.root, tx.upper)
	if err != nil {
		return err
	}
	defer a.close()
	for _, c := range cs.Changes {
		dir := path.Dir(c.Path)
		if c.Implied || madeBy(dir, made) {
			continue
		}
		_, err := a.dirFD(dir)
		if err != nil && !errors.Is(err, syscall.ENOENT) {
			return err
		}
	}
	return nil
}

// madeBy reports whether dir or one of its parents is made by the change set.
func madeBy(dir string, made map[string]bool) bool {
	for ; dir != "." && dir != "/" && dir != ""; dir = path.Dir(dir) {
		if made[dir] {
			return true
		}
	}
	return false
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
	defer tx.releaseOwnerWhenDecided()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	if err := tx.checkHeld(); err != nil {
		return err
	}
	tx.closed = true
	tx.closeBase()
	tx.begin.stop()
	perr := tx.rollbackParts(ctx, 0)
	if err := discard(tx.ws, tx.dir); err != nil {
		return err
	}
	tx.emit(Event{Kind: EventRollback})
	return perr
}
