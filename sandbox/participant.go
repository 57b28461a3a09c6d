package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
)

// Participant is a resource that commits or rolls back together with the
// staged files under the same decision record, by two-phase commit.
// The PostgreSQL participant in sandbox/pgtx is one.
type Participant interface {
	// Kind names the Resolver that Recover uses for this participant
	// after a crash, for example "postgres".
	Kind() string
	// Prepare makes the work durable but undecided under the global id
	// gid (PostgreSQL's PREPARE TRANSACTION).
	Prepare(ctx context.Context, gid string) error
	// CommitPrepared commits what Prepare left under gid.
	CommitPrepared(ctx context.Context, gid string) error
	// RollbackPrepared discards what Prepare left under gid.
	RollbackPrepared(ctx context.Context, gid string) error
	// Rollback discards work that was never prepared.
	Rollback(ctx context.Context) error
}

// Savepointer is implemented by participants that can take part in
// Tx.Savepoint and Tx.RollbackTo.
type Savepointer interface {
	Savepoint(ctx context.Context, name string) error
	RollbackTo(ctx context.Context, name string) error
}

// Resolver finishes a prepared participant after a crash: it commits or
// rolls back gid, and must succeed when gid is already gone (the work was
// finished before the crash).
type Resolver interface {
	Kind() string
	Resolve(ctx context.Context, gid string, commit bool) error
}

// partRecord is how the journal names a participant.
type partRecord struct {
	Kind string `json:"kind"`
	GID  string `json:"gid"`
	// Ref is a staged root's directory, relative to the transaction's
	// (roots/N/ID), for Recover to find it.
	Ref string `json:"ref,omitempty"`
}

// Join adds a participant to the transaction. Its work commits or rolls
// back with the files.
func (tx *Tx) Join(p Participant) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	if err := tx.joinLive(p); err != nil {
		return fmt.Errorf("sandbox: join %s: %w", p.Kind(), err)
	}
	tx.parts = append(tx.parts, p)
	return nil
}

// gid returns the prepared-transaction id of the i-th participant. It is
// derived from the transaction id, so it fits PostgreSQL's 200-byte limit.
func (tx *Tx) gid(i int) string {
	return fmt.Sprintf("jukebox-%s-%d", tx.meta.ID, i)
}

func (tx *Tx) partRecords() []partRecord {
	recs := make([]partRecord, len(tx.parts))
	for i, p := range tx.parts {
		recs[i] = partRecord{Kind: p.Kind(), GID: tx.gid(i)}
		if h, ok := p.(*heldPart); ok {
			recs[i].GID = h.gid
		}
		if r, ok := p.(*rootPart); ok {
			recs[i].Ref = filepath.ToSlash(r.ref)
		}
	}
	return recs
}

// rollbackParts aborts every participant: prepared ones by gid, others
// plainly. It returns the first error and tries them all.
func (tx *Tx) rollbackParts(ctx context.Context, prepared int) error {
	var first error
	for i, p := range tx.parts {
		var err error
		if i < prepared {
			err = p.RollbackPrepared(ctx, tx.gid(i))
		} else {
			err = p.Rollback(ctx)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("sandbox: rollback %s: %w", p.Kind(), err)
		}
	}
	return first
}
