package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// Savepoint records the staged state under name, so that RollbackTo can
// return to it later and keep what was staged before. It copies the
// staging area (by reflink where the file system can), so its cost is
// that of the changes, not of the workspace.
func (tx *Tx) Savepoint(ctx context.Context, name string) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	if name == "" || slices.Contains(tx.meta.Savepoints, name) {
		return fmt.Errorf("sandbox: savepoint %q: empty or already used", name)
	}
	dst := tx.savepointDir(len(tx.meta.Savepoints))
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("sandbox: savepoint: %w", err)
	}
	if err := copyTree(tx.upper, dst); err != nil {
		return fmt.Errorf("sandbox: savepoint: %w", err)
	}
	for _, p := range tx.parts {
		if sp, ok := p.(Savepointer); ok {
			if err := sp.Savepoint(ctx, spName(len(tx.meta.Savepoints))); err != nil {
				return fmt.Errorf("sandbox: savepoint %s: %w", p.Kind(), err)
			}
		}
	}
	tx.meta.Savepoints = append(tx.meta.Savepoints, name)
	if err := tx.writeMeta(); err != nil {
		return fmt.Errorf("sandbox: savepoint: %w", err)
	}
	tx.emit(Event{Kind: EventSavepoint, Name: name})
	return nil
}

// RollbackTo discards what was staged after the savepoint name, keeps
// what was staged before it, and keeps the savepoint itself; later
// savepoints are released.
func (tx *Tx) RollbackTo(ctx context.Context, name string) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.checkOpen(); err != nil {
		return err
	}
	i := slices.Index(tx.meta.Savepoints, name)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrNoSavepoint, name)
	}
	for _, p := range tx.parts {
		if sp, ok := p.(Savepointer); ok {
			if err := sp.RollbackTo(ctx, spName(i)); err != nil {
				return fmt.Errorf("sandbox: rollback to %s: %w", p.Kind(), err)
			}
		}
	}
	if err := tx.checkState(); err != nil {
		return err
	}
	old := tx.upper + ".old"
	if err := os.Rename(tx.upper, old); err != nil {
		return fmt.Errorf("sandbox: rollback to: %w", err)
	}
	if err := copyTree(tx.savepointDir(i), tx.upper); err != nil {
		return fmt.Errorf("sandbox: rollback to: %w", err)
	}
	if err := tx.pinState(); err != nil { // a new staging area, made here
		return fmt.Errorf("sandbox: rollback to: %w", err)
	}
	for k := i + 1; k < len(tx.meta.Savepoints); k++ {
		removeAll(tx.savepointDir(k))
	}
	tx.meta.Savepoints = tx.meta.Savepoints[:i+1]
	if err := tx.writeMeta(); err != nil {
		return fmt.Errorf("sandbox: rollback to: %w", err)
	}
	return removeAll(old)
}

func (tx *Tx) savepointDir(i int) string {
	return filepath.Join(tx.dir, "savepoints", fmt.Sprint(i))
}

// spName is the participant-side savepoint name for index i.
func spName(i int) string { return fmt.Sprintf("jukebox_sp_%d", i) }
