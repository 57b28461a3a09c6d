package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/internal/termtext"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// pendBooth commits an SDK transaction of a booth run: the booth's own
// transaction is held by the running agent, so the change set is applied
// in the agent's view of the workspace at once where the booth gives one
// (intoView), staged as the agent's own writing, and the rest (the
// PostgreSQL sessions joining the booth's decision; the change set itself
// where there is no view) waits for the agent to end (intoBooth). It is
// the change set to answer with.
func (t *sdkTxs) pendBooth(st *sdkTx) (sandbox.ChangeSet, error) {
	cs, err := st.tx.Diff()
	if err != nil {
		return cs, err
	}
	if len(cs.Refused) > 0 { // all or nothing, as outside the booth (Options.Whole)
		return cs, &sandbox.RefusedError{Refused: cs.Refused}
	}
	applied, err := t.intoView(st.tx.ID(), cs, staged, st.viewBase)
	if err != nil {
		return cs, err
	}
	p := &sdkTx{tx: st.tx, pg: st.pg, applied: applied}
	st.pg = nil // the booth's now: not closed with the SDK transaction
	t.mu.Lock()
	t.pending = append(t.pending, p)
	t.mu.Unlock()
	return cs, nil
}

// boothView is sandbox.ExecOptions.View for the booth's transaction bt:
// a commit while the agent runs is applied in v, its view; nil withdraws
// it once no commit is being applied.
func (t *sdkTxs) boothView(bt *sandbox.Tx) func(v *os.Root) {
	return func(v *os.Root) {
		t.viewMu.Lock()
		defer t.viewMu.Unlock()
		t.booth, t.view = bt, v
		if v == nil {
			t.booth = nil
		}
	}
}

// intoView applies cs, the change set of the transaction id (content
// gives a write's), in the running agent's view of the workspace, when the
// booth gave one: the agent then finds what it committed, as outside the
// booth, and the booth stages it with the agent's own writing (settled
// with the run); the changes are on the tape as the transaction's
// file.change frames, as a commit outside the booth puts them. False,
// nothing done, when there is no view (the agent has ended, or the booth
// could not open it): intoBooth stages cs then. A change set the booth's
// view cannot take whole is refused before anything is applied; one that
// fails part way (a link the agent planted leads out of the workspace)
// leaves what it applied before in the agent's view, and says so.
func (t *sdkTxs) intoView(id string, cs sandbox.ChangeSet, content func(*sandbox.Change) func() ([]byte, error), bases map[string]controlapi.FileBase) (bool, error) {
	t.viewMu.Lock()
	defer t.viewMu.Unlock()
	if t.view == nil {
		return false, nil
	}
	// Each write's file as the agent saw it when it staged it (bases):
	// changed in the view since (the agent wrote it again), it is a
	// conflict, as outside the booth; the commit wrote over it unchecked.
	for _, c := range cs.Changes {
		base, ok := bases[c.Path]
		if !ok {
			continue
		}
		if why := baseChanged(base, viewFileBase(t.view, c.Path), "in the booth"); why != "" {
			e := controlapi.Fail(http.StatusConflict, controlapi.TypeCommitConflict, fmt.Errorf("not committed into the booth: %s (%s)", c.Path, why))
			e.Conflicts = []controlapi.Conflict{{Path: c.Path, Reason: why}}
			return true, e
		}
	}
	if u := t.unstageable(t.booth, t.view, cs); u != nil {
		err := fmt.Errorf("not committed into the booth: %s", u.why)
		if u.kept {
			return true, controlapi.Fail(http.StatusForbidden, controlapi.TypeSandboxViolation, err)
		}
		e := controlapi.Fail(http.StatusConflict, controlapi.TypeCommitConflict, err)
		e.Conflicts = []controlapi.Conflict{{Path: u.path, Reason: u.why}}
		return true, e
	}
	for i := range cs.Changes {
		c := &cs.Changes[i]
		var data []byte // a write's, for its frame
		written := func() ([]byte, error) {
			b, err := content(c)()
			data = b
			return b, err
		}
		if err := stageChange(viewFiles{t.view}, c, written); err != nil {
			before := "nothing of it was written"
			if i > 0 {
				before = fmt.Sprintf("%s before it in the agent's view, settled with the run", termtext.Count(i, "change", "changes"))
			}
			return true, fmt.Errorf("committing into the booth's view of the workspace, %s %s: %w (%s)", c.Op, c.Path, err, before)
		}
		t.session.appendFrame(t.session.changeFrame(id, "", c, 0, data))
	}
	return true, nil
}

// intoBooth stages the SDK transactions a booth run committed into the
// booth's transaction bt, once the agent ended: each change set not
// applied in the agent's view already (intoView) is staged there (on the
// tape as its file.change frames), the PostgreSQL sessions join the
// booth's decision, and the booth settles it all as --commit says. Each
// SDK transaction's own staging is then dropped. They staged over the
// real workspace: they read what it held when the run began, not what the
// agent wrote in the booth.
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
// first changes committed alone. A transaction applied in the agent's
// view already has its files there: only its PostgreSQL work joins.
func (t *sdkTxs) stageInto(bt *sandbox.Tx, st *sdkTx) error {
	if !st.applied {
		cs, err := st.tx.Diff()
		if err != nil {
			return err
		}
		files := bt.Files()
		if u := t.unstageable(bt, files, cs); u != nil {
			for _, p := range st.pg {
				p.Rollback(context.Background())
			}
			reason := "not staged into the booth: " + u.why
			t.session.appendFrame(tapefmt.TxRollback{Tx: st.tx.ID(), Reason: reason, SQL: st.sqlWork()})
			return fmt.Errorf("SDK transaction %s %s; none of its changes were staged", st.tx.ID(), reason)
		}
		for i := range cs.Changes {
			c := &cs.Changes[i]
			if err := stageChange(files, c, staged(c)); err != nil {
				return err
			}
			t.session.recordChange(st.tx.ID(), "", c)
		}
	}
	for _, p := range st.pg {
		if err := bt.Join(p); err != nil {
			return err
		}
	}
	return nil
}

// unfit is why a change set cannot be staged whole in the booth: a
// change to path, why; kept when the booth keeps path from the agent.
type unfit struct {
	path, why string
	kept      bool
}

// unstageable says why the change set cs cannot be staged whole in the
// booth's transaction bt, whose view (the staged one, or the running
// agent's) is in, nil when it can: a path the booth keeps read-only for the
// agent, or a change under a path that is no folder there.
func (t *sdkTxs) unstageable(bt *sandbox.Tx, in interface {
	Lstat(string) (fs.FileInfo, error)
}, cs sandbox.ChangeSet) *unfit {
	kept := bt.Protected(t.session.protected())
	made := map[string]bool{} // folders the change set replaces whatever was there
	for _, c := range cs.Changes {
		if c.Op == sandbox.OpReplaceDir {
			made[c.Path] = true
		}
	}
	for _, c := range cs.Changes {
		for _, k := range kept {
			if c.Path == k || strings.HasPrefix(c.Path, k+"/") {
				return &unfit{c.Path, fmt.Sprintf("it changes %s, which the booth keeps from the agent (the tape being recorded)", c.Path), true}
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
			if fi, err := in.Lstat(dir); err == nil && !fi.IsDir() {
				if dir == c.Path {
					return &unfit{dir, fmt.Sprintf("it makes the folder %s, which is a file in the booth", dir), false}
				}
				return &unfit{dir, fmt.Sprintf("it puts %s under %s, which is no folder in the booth", c.Path, dir), false}
			}
		}
	}
	return nil
}

// staged is the content of a change staged by a transaction of this run.
func staged(c *sandbox.Change) func() ([]byte, error) {
	return func() ([]byte, error) {
		r, err := c.Open()
		if err != nil {
			return nil, err
		}
		defer r.Close()
		return io.ReadAll(r)
	}
}

// viewFiles is the running agent's view as a stager. A write opens its
// file without waiting and writes only to a regular file: a FIFO the agent
// planted at the path would hold the commit, and the run's end, until
// something read it.
type viewFiles struct{ *os.Root }

func (v viewFiles) WriteFile(name string, data []byte, perm fs.FileMode) error {
	f, err := v.OpenFile(name, os.O_WRONLY|os.O_CREATE|syscall.O_NONBLOCK, perm)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: a %s in the booth, not a file", name, fi.Mode().Type())
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	return errors.Join(err, f.Close())
}

// stager is where a change of another transaction is staged: the booth's
// staged view (sandbox.Files), or the running agent's view (os.Root).
type stager interface {
	WriteFile(name string, data []byte, perm fs.FileMode) error
	RemoveAll(name string) error
	Symlink(target, name string) error
	MkdirAll(name string, perm fs.FileMode) error
	Chmod(name string, mode fs.FileMode) error
}

// stageChange stages one change of another transaction in files; the
// content of a write is content's.
func stageChange(files stager, c *sandbox.Change, content func() ([]byte, error)) error {
	switch c.Op {
	case sandbox.OpWrite:
		data, err := content()
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

// replayedCommit puts into the agent's view, in a booth run that answers
// the commit of transaction id from the tape tp (a replay --booth, or a
// fork before its fork point), what that commit changed when recorded:
// the transaction's file.change frames (of the workspace, not step
// records), applied as a live commit is (intoView), permissions alone. The
// agent finds what it committed, as it did when recorded. Nothing outside
// a booth run, whose replay commits nothing (docs/control-api.md): the
// paths it changed when recorded are kept for the run's result
// (NotCommitted).
func (t *sdkTxs) replayedCommit(tp *tapefmt.Tape, id string) error {
	if t == nil {
		return nil
	}
	t.recordedOnce.Do(func() { t.recorded, t.recordedErr = recordedCommits(tp) })
	if t.recordedErr != nil {
		return t.recordedErr
	}
	rec := t.recorded[id]
	t.viewMu.Lock()
	viewed := t.view != nil
	if !viewed {
		for _, c := range rec.changes {
			t.notApplied = append(t.notApplied, c.Path)
		}
	}
	t.viewMu.Unlock()
	if !viewed {
		return nil
	}
	cs := sandbox.ChangeSet{Changes: rec.changes}
	bodyOf := make(map[*sandbox.Change]tapefmt.Hash, len(rec.bodies))
	for i := range cs.Changes {
		bodyOf[&cs.Changes[i]] = rec.bodies[i]
	}
	_, err := t.intoView(id, cs, func(c *sandbox.Change) func() ([]byte, error) {
		body := bodyOf[c]
		return func() ([]byte, error) {
			if body.IsZero() {
				return nil, fmt.Errorf("the tape does not hold the content of %s (over the blob limit)", c.Path)
			}
			return tp.Blob(body)
		}
	}, nil)
	if err != nil {
		return fmt.Errorf("transaction %s's recorded commit, into the booth: %w", id, err)
	}
	return nil
}

// recordedCommit is what a transaction's commit changed, as its
// file.change frames have it: each change, and its content's blob.
type recordedCommit struct {
	changes []sandbox.Change
	bodies  []tapefmt.Hash
}

// recordedCommits reads every transaction's file.change frames on tp (of
// the workspace, not step records nor refusals), by transaction.
func recordedCommits(tp *tapefmt.Tape) (map[string]recordedCommit, error) {
	out := map[string]recordedCommit{}
	for f, err := range tp.Frames(tapefmt.KindFileChange) {
		if err != nil {
			return nil, err
		}
		p, err := f.Decode()
		if err != nil {
			return nil, err
		}
		fc := p.(*tapefmt.FileChange)
		if fc.Tx == "" || fc.Root != "" || fc.Step != 0 || fc.Refused != "" {
			continue
		}
		rc := out[fc.Tx]
		rc.changes = append(rc.changes, sandbox.Change{Path: fc.Path, Op: fc.Op, Mode: fs.FileMode(fc.Mode & 0o777), Size: fc.Size, Target: fc.Target})
		rc.bodies = append(rc.bodies, fc.Body)
		out[fc.Tx] = rc
	}
	return out, nil
}

// notCommitted are the paths that commits answered from the tape outside a
// booth changed when recorded (replayedCommit), each once, in order.
func (t *sdkTxs) notCommitted() []string {
	if t == nil {
		return nil
	}
	t.viewMu.Lock()
	defer t.viewMu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, p := range t.notApplied {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}
