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

// A decision record that cannot be written (ENOSPC, EIO) comes after
// every participant was prepared. A participant whose prepared work
// outlives its process (a PostgreSQL prepared transaction) is then held:
// the "prepare" journal, which names it and its gid, is renamed to
// heldName (a rename needs no free space), so that Recover, which reads
// the journal only, leaves it alone, and Open takes it up again with the
// Resolver of its kind (Options.Resolvers). The transaction stays open:
// its files and the held work commit or roll back together.

// heldName is the record of the participants a failed decision held.
const heldName = "held.json"

// heldPart is a participant left prepared under gid by a commit whose
// decision could not be written: p in the process that prepared it, r
// (a Resolver of its kind, or nil when none was given) in another.
type heldPart struct {
	kind, gid string
	p         Participant
	r         Resolver
}

// Kind is the held participant's kind.
func (h *heldPart) Kind() string { return h.kind }

// Prepare does nothing: the work is prepared under h.gid already.
func (h *heldPart) Prepare(ctx context.Context, gid string) error { return h.usable() }

// CommitPrepared commits the held work.
func (h *heldPart) CommitPrepared(ctx context.Context, gid string) error { return h.finish(ctx, true) }

// RollbackPrepared rolls the held work back.
func (h *heldPart) RollbackPrepared(ctx context.Context, gid string) error {
	return h.finish(ctx, false)
}

// Rollback rolls the held work back: it is prepared.
func (h *heldPart) Rollback(ctx context.Context) error { return h.finish(ctx, false) }

func (h *heldPart) usable() error {
	if h.p == nil && h.r == nil {
		return fmt.Errorf("%w: its %s work is prepared (%s) and this command was given no way to finish it "+
			"(for --pg work: --pg-dsn, or JUKEBOX_BOOTH_PG_DSN)", ErrHeld, h.kind, h.gid)
	}
	return nil
}

func (h *heldPart) finish(ctx context.Context, commit bool) error {
	switch {
	case h.p != nil && commit:
		return h.p.CommitPrepared(ctx, h.gid)
	case h.p != nil:
		return h.p.RollbackPrepared(ctx, h.gid)
	case h.r != nil:
		return h.r.Resolve(ctx, h.gid, commit)
	}
	return h.usable()
}

// ErrHeld is why a transaction holding prepared work cannot be committed
// or rolled back without the means to finish that work.
var ErrHeld = errors.New("sandbox: the transaction holds prepared work of another participant")

// hold keeps the prepared participants for a later decision: the journal
// becomes the held record, the staged roots' votes are taken back, and
// each other participant is held under its gid.
func (tx *Tx) hold() error {
	if err := os.Rename(filepath.Join(tx.dir, journalName), filepath.Join(tx.dir, heldName)); err != nil {
		return err
	}
	if err := syncDir(tx.dir); err != nil {
		return err
	}
	for i, p := range tx.parts {
		switch p := p.(type) {
		case *rootPart:
			if err := p.unprepare(); err != nil {
				return err
			}
		case *heldPart:
		default:
			tx.parts[i] = &heldPart{kind: p.Kind(), gid: tx.gid(i), p: p}
		}
	}
	return nil
}

// heldKinds names the held participants' kinds, for messages.
func (tx *Tx) heldKinds() string {
	var kinds []string
	for _, p := range tx.parts {
		if h, ok := p.(*heldPart); ok {
			kinds = append(kinds, h.kind)
		}
	}
	return strings.Join(kinds, ", ")
}

// openHeld takes up the participants a failed decision held, each with
// the Resolver of its kind from the options.
func (tx *Tx) openHeld(keys *keyRing) error {
	j, found, untrusted, err := readJournalFile(tx.ws, tx.dir, heldName, keys)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case !found:
		return nil
	case untrusted != "":
		return fmt.Errorf("%w: %s: held record: %s", ErrUntrusted, tx.meta.ID, untrusted)
	}
	for _, rec := range j.Participants {
		if rec.Kind == rootKind {
			continue
		}
		h := &heldPart{kind: rec.Kind, gid: rec.GID}
		for _, r := range tx.opts.Resolvers {
			if r.Kind() == rec.Kind {
				h.r = r
			}
		}
		tx.parts = append(tx.parts, h)
		tx.live = append(tx.live, h)
	}
	return nil
}

// checkHeld refuses to commit or roll back held work it cannot finish.
func (tx *Tx) checkHeld() error {
	for _, p := range tx.parts {
		if h, ok := p.(*heldPart); ok {
			if err := h.usable(); err != nil {
				return fmt.Errorf("%w; nothing was applied or discarded", err)
			}
		}
	}
	return nil
}
