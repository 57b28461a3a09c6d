package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ownerName is the file in a transaction's state directory that the
// process using the transaction keeps locked while it does: the one that
// began it, or a booth command that opened it (Open). Another process's
// Open refuses the transaction (ErrInUse) and List says it is Running:
// a booth rollback had discarded the staging area of a run still going,
// whose commit then failed, and booth status called that run's live
// PostgreSQL work lost. The kernel lets the lock go when the process
// ends, however it ends.
const ownerName = "owner.lock"

// ErrInUse reports a transaction a running process is using.
var ErrInUse = errors.New("in use by a running jukebox (its run has not ended)")

// takeOwner locks the transaction's owner file for this Tx, or returns
// ErrInUse.
func (tx *Tx) takeOwner() error {
	f, err := os.OpenFile(filepath.Join(tx.dir, ownerName), os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", tx.meta.ID, err)
	}
	if err := tryLockFile(f); err != nil {
		f.Close()
		return fmt.Errorf("sandbox: %s: %w", tx.meta.ID, err)
	}
	tx.owner = f
	return nil
}

// Release lets another process open the transaction, which this one
// leaves open: a run that ended with its transaction kept, for a booth
// command (or the user) to decide. The Tx still works, but another
// process may now open and decide the transaction.
func (tx *Tx) Release() {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	tx.releaseOwner()
}

// releaseOwnerWhenDecided lets the owner lock go once the transaction is
// decided. The caller holds tx.mu.
func (tx *Tx) releaseOwnerWhenDecided() {
	if tx.closed {
		tx.releaseOwner()
	}
}

// releaseOwner unlocks the owner file before it closes it: a child that
// another thread of this process is starting holds a copy of every file
// from its fork until its exec, and with it the lock, which closing this
// copy alone would leave held a moment longer (seen on CI: a booth run's
// transaction, kept open, was "in use" to the Open that followed).
func (tx *Tx) releaseOwner() {
	if tx.owner != nil {
		unlockFile(tx.owner)
		tx.owner.Close()
		tx.owner = nil
	}
}

// inUse reports whether a running process holds the owner lock of the
// transaction in txDir.
func inUse(txDir string) bool {
	f, err := os.OpenFile(filepath.Join(txDir, ownerName), os.O_RDWR|oNoFollow, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := tryLockFile(f); err != nil {
		return errors.Is(err, ErrInUse)
	}
	unlockFile(f)
	return false
}
