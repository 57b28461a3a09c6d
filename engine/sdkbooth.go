package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// pendBooth commits an SDK transaction of a booth run: the booth's own
// transaction is held by the running agent, so the change set waits for
// the agent to end (intoBooth). It is the change set to answer with.
func (t *sdkTxs) pendBooth(st *sdkTx) (sandbox.ChangeSet, error) {
	cs, err := st.tx.Diff()
	if err != nil {
		return cs, err
	}
	if len(cs.Refused) > 0 { // all or nothing, as outside the booth (Options.Whole)
		return cs, &sandbox.RefusedError{Refused: cs.Refused}
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

// stageInto stages one committed SDK transaction in bt, whole or not at
// all: a change to what the booth keeps from the agent (the tape's folder)
// or one the booth's view cannot take (a file where the transaction has a
// folder) leaves the whole transaction out, its PostgreSQL work rolled
// back, on the tape as that transaction's tx.rollback. The control API
// stages over the real workspace, out of the agent's mount namespace:
// without this its writes reached the folder the agent may not change
// (a tape overwritten with another run's, deleted, a jukebox.json
// planted beside them), and a transaction stopped half way had its
// first changes committed alone.
func (t *sdkTxs) stageInto(bt *sandbox.Tx, st *sdkTx) error {
	cs, err := st.tx.Diff()
	if err != nil {
		return err
	}
	files := bt.Files()
	if why := t.unstageable(bt, cs); why != "" {
		for _, p := range st.pg {
			p.Rollback(context.Background())
		}
		reason := "not staged into the booth: " + why
		t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: reason, SQL: st.sqlWork()})
		return fmt.Errorf("SDK transaction %s %s; none of its changes were staged", st.tx.ID(), reason)
	}
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

// unstageable says why the change set cs cannot be staged whole in the
// booth's transaction bt, "" when it can: a path the booth keeps read-only
// for the agent, or a change under a path that is no folder there.
func (t *sdkTxs) unstageable(bt *sandbox.Tx, cs sandbox.ChangeSet) string {
	files, kept := bt.Files(), bt.Protected(t.session.protected())
	made := map[string]bool{} // folders the change set replaces whatever was there
	for _, c := range cs.Changes {
		if c.Op == sandbox.OpReplaceDir {
			made[c.Path] = true
		}
	}
	for _, c := range cs.Changes {
		for _, k := range kept {
			if c.Path == k || strings.HasPrefix(c.Path, k+"/") {
				return fmt.Sprintf("it changes %s, which the booth keeps from the agent (the tape being recorded)", c.Path)
			}
		}
		if c.Op == sandbox.OpDelete {
			continue
		}
		dir := path.Dir(c.Path)
		if c.Op == sandbox.OpMkdir {
			dir = c.Path // made where the booth may hold a file
		}
		for ; dir != "." && dir != "/"; dir = path.Dir(dir) {
			if made[dir] {
				break
			}
			if fi, err := files.Lstat(dir); err == nil && !fi.IsDir() {
				return fmt.Sprintf("it puts %s under %s, which is no folder in the booth", c.Path, dir)
			}
		}
	}
	return ""
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
