package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A participant other than a staged root (Join) holds its work in the
// process that joined it: the --pg endpoint's sessions end with jukebox,
// and PostgreSQL rolls back what they had not prepared. So that a crash
// before the decision can never leave the files to commit alone, Join
// writes the participant into tx.json (LostWork), and a transaction
// reopened by another process (Open) that names one refuses to commit:
// its files and the participant's work are one decision, and half of it
// is gone. Rollback still works. NoteWork keeps what the participant
// held, for booth diff to show what was lost.

// LostWork is a participant whose work lives in the process that joined
// it, as tx.json records it (Join): in a transaction reopened after that
// process ended, its work is lost (Tx.Lost).
type LostWork struct {
	Kind string `json:"kind"`
	// Work describes what it held (NoteWork), in the participant's own
	// terms (the --pg endpoint's sessions and statements).
	Work json.RawMessage `json:"work,omitempty"`
}

// ErrLostWork is why a reopened transaction whose participants' work
// ended with its run cannot commit.
var ErrLostWork = errors.New("sandbox: the transaction's other participants ended with the run that made it")

// joinLive records a participant in tx.json (with tx.mu held).
func (tx *Tx) joinLive(p Participant) error {
	if _, ok := p.(*rootPart); ok {
		return nil
	}
	tx.meta.Live = append(tx.meta.Live, LostWork{Kind: p.Kind()})
	tx.live = append(tx.live, p)
	return tx.writeMeta()
}

// NoteWork records what the joined participant of kind holds (its
// description, for booth diff after a crash), in tx.json.
func (tx *Tx) NoteWork(kind string, work json.RawMessage) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	for i := range tx.meta.Live {
		if tx.meta.Live[i].Kind == kind {
			tx.meta.Live[i].Work = work
			return tx.writeMeta()
		}
	}
	return fmt.Errorf("sandbox: no participant of kind %q joined %s", kind, tx.meta.ID)
}

// Lost is the work of the participants that joined the transaction in a
// process that has ended: nil for the process that joined them. A
// transaction with lost work commits nothing (ErrLostWork); roll it back.
func (tx *Tx) Lost() []LostWork {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.lost()
}

func (tx *Tx) lost() []LostWork {
	if len(tx.meta.Live) <= len(tx.live) {
		return nil
	}
	return slices.Clone(tx.meta.Live[len(tx.live):])
}

// checkLive refuses the commit of a transaction with lost work.
func (tx *Tx) checkLive() error {
	lost := tx.lost()
	if len(lost) == 0 {
		return nil
	}
	kinds := make([]string, len(lost))
	for i, l := range lost {
		kinds[i] = l.Kind
	}
	return fmt.Errorf("%w: %s held %s work that ended, rolled back, when the run ended before its decision; "+
		"committing the files alone would split one decision in two: jukebox booth rollback --tx %s discards them",
		ErrLostWork, tx.meta.ID, strings.Join(kinds, ", "), tx.meta.ID)
}
