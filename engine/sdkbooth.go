package engine

import (
	"context"
	"errors"
	"io"

	"github.com/jukebox-os/jukebox/sandbox"
)

// pendBooth commits an SDK transaction of a booth run: the booth's own
// transaction is held by the running agent, so the change set waits for
// the agent to end (intoBooth). It is the change set to answer with.
func (t *sdkTxs) pendBooth(st *sdkTx) (sandbox.ChangeSet, error) {
	cs, err := st.tx.Diff()
	if err != nil {
		return cs, err
	}
	p := &sdkTx{tx: st.tx, pg: st.pg}
	st.pg = nil // the booth's now: not closed with the SDK transaction
	t.mu.Lock()
	t.pending = append(t.pending, p)
	t.mu.Unlock()
	return cs, nil
}

// intoBooth stages the SDK transactions a booth run committed into the
// booth's transaction bt, once the agent ended: each change set is staged
// there (on the tape as its file.change frames), the PostgreSQL sessions
// join the booth's decision, and the booth settles it all as --commit
// says. Each SDK transaction's own staging is then dropped. They staged
// over the real workspace: they read what it held when the run began,
// not what the agent wrote in the booth.
func (t *sdkTxs) intoBooth(ctx context.Context, bt *sandbox.Tx) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	pending := t.pending
	t.pending = nil
	t.mu.Unlock()
	var errs []error
	for _, st := range pending {
		errs = append(errs, t.stageInto(bt, st), st.tx.Rollback(ctx))
	}
	return errors.Join(errs...)
}

// stageInto stages one committed SDK transaction in bt.
func (t *sdkTxs) stageInto(bt *sandbox.Tx, st *sdkTx) error {
	cs, err := st.tx.Diff()
	if err != nil {
		return err
	}
	files := bt.Files()
	for i := range cs.Changes {
		c := &cs.Changes[i]
		if err := stageChange(files, c); err != nil {
			return err
		}
		t.session.recordChange(st.tx.ID(), "", c)
	}
	for _, p := range st.pg {
		if err := bt.Join(p); err != nil {
			return err
		}
	}
	return nil
}

// stageChange stages one change of another transaction in files.
func stageChange(files *sandbox.Files, c *sandbox.Change) error {
	switch c.Op {
	case sandbox.OpWrite:
		r, err := c.Open()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		return files.WriteFile(c.Path, data, c.Mode.Perm())
	case sandbox.OpSymlink:
		files.RemoveAll(c.Path)
		return files.Symlink(c.Target, c.Path)
	case sandbox.OpMkdir:
		return files.MkdirAll(c.Path, c.Mode.Perm())
	case sandbox.OpReplaceDir:
		if err := files.RemoveAll(c.Path); err != nil {
			return err
		}
		return files.MkdirAll(c.Path, c.Mode.Perm())
	case sandbox.OpDelete:
		if c.Implied {
			return nil
		}
		return files.RemoveAll(c.Path)
	case sandbox.OpChmod, sandbox.OpChmodDir:
		return files.Chmod(c.Path, c.Mode)
	}
	return nil
}
