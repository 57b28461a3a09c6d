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
}

// Recover finishes or undoes every commit that a crash interrupted in the
// workspace, as its journal says: a decided commit is applied again (every
// step is idempotent) and its participants committed; an undecided one has
// its participants rolled back and is dropped. Transactions that were
// merely left open are not touched. Call it before using a workspace.
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
	for _, e := range ents {
		if err := recoverOne(ctx, w, e, byKind, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func recoverOne(ctx context.Context, w *workspace, e fs.DirEntry, byKind map[string]Resolver, rep *RecoverReport) error {
	dir := filepath.Join(w.stateRoot, e.Name())
	if strings.HasPrefix(e.Name(), ".trash-") {
		return removeAll(dir)
	}
	if !e.IsDir() {
		return nil
	}
	j, ok, err := readJournal(dir)
	if err != nil || !ok {
		return err
	}
	for _, p := range j.Participants {
		if byKind[p.Kind] == nil {
			return fmt.Errorf("%w %q (tx %s)", ErrNoResolver, p.Kind, j.TxID)
		}
	}
	if j.State != stateCommit {
		for _, p := range j.Participants {
			if err := byKind[p.Kind].Resolve(ctx, p.GID, false); err != nil {
				return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
			}
		}
		rep.RolledBack = append(rep.RolledBack, j.TxID)
		return discard(w, dir)
	}
	finish := func(gid string, i int) error {
		return byKind[j.Participants[i].Kind].Resolve(ctx, gid, true)
	}
	if err := finishCommit(w, dir, j, true, finish); err != nil {
		return fmt.Errorf("sandbox: recover %s: %w", j.TxID, err)
	}
	rep.Committed = append(rep.Committed, j.TxID)
	return nil
}
