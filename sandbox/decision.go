package sandbox

import (
	"context"
	"fmt"
)

// abortPrepared handles a decision that could not be written: nothing
// was applied. Without participants, or with staged roots alone, the
// transaction stays open, its change set whole. Other participants are
// prepared already (PostgreSQL keeps a prepared transaction after its
// session ends): they stay prepared, held for the later decision (hold),
// so files and SQL remain one. Only when that cannot be recorded are they
// rolled back and the files with them, one decision.
func (tx *Tx) abortPrepared(ctx context.Context, cause error) error {
	cause = fmt.Errorf("sandbox: commit %s: the decision could not be written: %w; nothing was applied", tx.meta.ID, cause)
	if tx.rootsOnly() {
		// A rename that landed before a failed directory sync leaves a
		// decision Recover would apply: it must go, or nothing is open.
		if err := tx.unprepare(); err != nil {
			tx.closed = true
			return fmt.Errorf("%w; its record may still be read (%v): jukebox booth recover settles it", cause, err)
		}
		return fmt.Errorf("%w; the transaction stays open", cause)
	}
	if err := tx.hold(); err == nil {
		return fmt.Errorf("%w; the transaction stays open, its %s work prepared, held for jukebox booth commit or rollback", cause, tx.heldKinds())
	}
	if rerr := tx.rollbackParts(ctx, len(tx.parts)); rerr != nil {
		// The "prepare" journal stays: Recover rolls them back.
		tx.closed = true
		return fmt.Errorf("%w; rolling back its participants failed (%v): jukebox booth recover tries again", cause, rerr)
	}
	tx.closed = true
	discard(tx.ws, tx.dir)
	return fmt.Errorf("%w; the transaction was rolled back with its participants", cause)
}

// rootsOnly reports whether every participant is a staged root.
func (tx *Tx) rootsOnly() bool {
	for _, p := range tx.parts {
		if _, ok := p.(*rootPart); !ok {
			return false
		}
	}
	return true
}

// unprepare takes back what a commit wrote before its decision: the
// staged roots' votes, then the journal.
func (tx *Tx) unprepare() error {
	for _, p := range tx.parts {
		if err := p.(*rootPart).unprepare(); err != nil {
			return err
		}
	}
	return removeJournal(tx.dir)
}
