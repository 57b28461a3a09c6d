package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// journalName is the decision record inside a transaction's directory.
// It is JSON, replaced atomically (write, fsync, rename, fsync dir):
//
//	state "prepare": participants are being prepared; no decision yet.
//	                 Recover rolls the participants back and drops the tx.
//	state "commit":  the decision. Recover re-applies every change (each
//	                 step is idempotent), commits the participants, and
//	                 removes the transaction.
const journalName = "journal.json"

// Journal states.
const (
	statePrepare = "prepare"
	stateCommit  = "commit"
)

// journal is the decision record.
type journal struct {
	TxID         string       `json:"tx"`
	State        string       `json:"state"`
	Participants []partRecord `json:"participants,omitempty"`
	Changes      []Change     `json:"changes,omitempty"`
}

func writeJournal(dir string, j journal) error {
	if err := writeJSONAtomic(filepath.Join(dir, journalName), j); err != nil {
		return fmt.Errorf("sandbox: write journal: %w", err)
	}
	return nil
}

func readJournal(dir string) (journal, bool, error) {
	var j journal
	err := readJSON(filepath.Join(dir, journalName), &j)
	if errors.Is(err, fs.ErrNotExist) {
		return j, false, nil
	}
	if err != nil {
		return j, false, fmt.Errorf("sandbox: read journal in %s: %w", dir, err)
	}
	return j, true, nil
}

// failpoint, when set (by tests), is called at every step of a commit and
// of recovery; an error it returns stops the work right there, as a crash
// would, leaving the state on disk for Recover.
var failpoint func(step string) error

func fail(step string) error {
	if failpoint == nil {
		return nil
	}
	return failpoint(step)
}

// stateLock serialises commits and recovery in one state root.
type stateLock struct{ f *os.File }

func lockState(w *workspace) (*stateLock, error) {
	if err := os.MkdirAll(w.stateRoot, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(w.stateRoot, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sandbox: lock: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("sandbox: lock: %w", err)
	}
	return &stateLock{f: f}, nil
}

func (l *stateLock) release() {
	unlockFile(l.f)
	l.f.Close()
}

// discard removes a transaction directory: first renamed aside in one
// atomic step, so a crash never leaves half a transaction that looks open.
func discard(w *workspace, dir string) error {
	trash := filepath.Join(w.stateRoot, ".trash-"+filepath.Base(dir))
	if err := os.Rename(dir, trash); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sandbox: discard: %w", err)
	}
	if err := removeAll(trash); err != nil {
		return fmt.Errorf("sandbox: discard: %w", err)
	}
	removeCopies(w, filepath.Base(dir)) // a copy run's folder left by a killed jukebox
	pruneState(w)
	return nil
}

// pruneState removes the empty state folders inside the workspace when the
// last transaction is gone, so that nothing is left behind. It never goes
// above the workspace root and removes only empty folders.
func pruneState(w *workspace) {
	if w.stateRel == "" {
		return
	}
	for dir := w.stateRoot; dir != w.root && strings.HasPrefix(dir, w.root+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}
