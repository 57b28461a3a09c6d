package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jukebox-os/jukebox/controlapi"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/sandbox/pgtx"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// txOps is an open SDK transaction as the control API serves it
// (controlapi.Tx): one operation at a time.
type txOps struct {
	t  *sdkTxs
	st *sdkTx
}

var _ controlapi.Tx = txOps{}

// Tx is the open transaction id.
func (c *control) Tx(_ context.Context, id string) (controlapi.Tx, error) {
	t := c.txs
	var st *sdkTx
	if t.available() {
		t.mu.Lock()
		st = t.open[id]
		t.mu.Unlock()
	}
	if st == nil {
		return nil, controlapi.Failf(http.StatusNotFound, controlapi.TypeNotFound, "no open transaction %q", id)
	}
	return txOps{t, st}, nil
}

// Write stages a file: text, or base64; mode 0644 by default. Missing
// parent folders are staged too (0755), as a plain write's caller would
// make them; content is required (null never empties a file).
func (o txOps) Write(ctx context.Context, req controlapi.Write) (controlapi.Written, error) {
	data, err := req.Data()
	if err != nil {
		return controlapi.Written{}, err
	}
	perm := fs.FileMode(0o644)
	if req.Mode != 0 {
		perm = fs.FileMode(req.Mode & 0o777)
	}
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	base := controlapi.BaseOf(ctx)
	var conflict error
	check := func(real *sandbox.RealFile) error {
		conflict = o.checkBase(req.Path, base, real)
		return conflict
	}
	files := o.st.tx.Files()
	err = files.WriteFileIf(req.Path, data, perm, check)
	if dir := path.Dir(filepath.ToSlash(req.Path)); errors.Is(err, fs.ErrNotExist) && conflict == nil && dir != "." && dir != "/" {
		// A parent folder missing: staged as a plain write's caller
		// would make it, then the write again.
		if err := files.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return controlapi.Written{}, txError(err)
		}
		err = files.WriteFileIf(req.Path, data, perm, check)
	}
	switch {
	case conflict != nil:
		return controlapi.Written{}, conflict
	case err != nil:
		return controlapi.Written{}, txError(err)
	}
	return controlapi.Written{Path: req.Path, Size: len(data)}, nil
}

// Delete stages the deletion of a file.
func (o txOps) Delete(ctx context.Context, req controlapi.PathOf) (controlapi.PathOf, error) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	if err := o.checkBase(req.Path, controlapi.BaseOf(ctx), nil); err != nil {
		return controlapi.PathOf{}, err
	}
	if err := o.st.tx.Files().Remove(req.Path); err != nil {
		return controlapi.PathOf{}, txError(err)
	}
	return req, nil
}

// checkBase: the real file at rel is as the client saw it when it staged
// the operation (base), which it sent later in a batch
// (controlapi.BaseOf); a file changed
// since is a commit conflict, as a change after the staging would be at
// the commit. In a booth run the agent sees the booth's view, not the
// real file: no base is checked there. A path that is not a plain one
// below the workspace is left to the staging, which refuses it.
func (o txOps) checkBase(rel string, base *controlapi.FileBase, real *sandbox.RealFile) error {
	if base == nil || !filepath.IsLocal(rel) {
		return nil
	}
	if o.st.inBooth {
		// The agent saw its view, not the real workspace: its base is kept
		// for the commit into the view, which checks it (intoView).
		key := filepath.ToSlash(filepath.Clean(rel))
		if o.st.viewBase == nil {
			o.st.viewBase = map[string]controlapi.FileBase{}
		}
		if _, seen := o.st.viewBase[key]; !seen {
			o.st.viewBase[key] = *base
		}
		return nil
	}
	if real == nil {
		if o.st.real == nil {
			root, err := os.OpenRoot(o.st.tx.Workspace())
			if err != nil {
				return txError(err)
			}
			o.st.real = root
		}
		st, err := o.st.real.Lstat(rel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil // unreadable: the staging says why, or the commit's check
		}
		real = &sandbox.RealFile{Exists: err == nil, Info: st}
	}
	now := controlapi.FileBase{Exists: real.Exists}
	if real.Exists {
		now.Size, now.MtimeNs = real.Info.Size(), real.Info.ModTime().UnixNano()
	}
	why := baseChanged(*base, now, "on the real side")
	if why == "" {
		return nil
	}
	e := controlapi.Fail(http.StatusConflict, controlapi.TypeCommitConflict, fmt.Errorf("conflicting change on the real side: %s (%s)", rel, why))
	e.Conflicts = []controlapi.Conflict{{Path: filepath.ToSlash(rel), Reason: why}}
	return e
}

// baseChanged says how the file now differs from the base a write was
// staged on ("changed after it was staged", "deleted ...", "created
// ..."), "" when it does not.
func baseChanged(base, now controlapi.FileBase, where string) string {
	verb := "changed"
	switch {
	case now == base:
		return ""
	case base.Exists && !now.Exists:
		verb = "deleted"
	case !base.Exists && now.Exists:
		verb = "created"
	}
	return verb + " " + where + " after it was staged"
}

// viewFileBase is the file at rel in the agent's view, as a base.
func viewFileBase(view *os.Root, rel string) controlapi.FileBase {
	st, err := view.Lstat(rel)
	if err != nil {
		return controlapi.FileBase{}
	}
	return controlapi.FileBase{Exists: true, Size: st.Size(), MtimeNs: st.ModTime().UnixNano()}
}

// StagePath is the staged copy of a file (copied up, created empty when
// there is none), for a client that changes it in place: a SQLite
// database, which the commit swaps in whole.
func (o txOps) StagePath(_ context.Context, req controlapi.PathOf) (controlapi.Staged, error) {
	if o.st.inBooth {
		return controlapi.Staged{}, controlapi.Failf(http.StatusConflict, controlapi.TypeUnavailable,
			"stage-path: in a booth run the staged copy would be outside the agent's view; open %s in the workspace (the booth stages it with the run) or run outside the booth", req.Path)
	}
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	// The tape keeps the staged copy as it is now, in one blob (a replay
	// gives the agent a scratch copy of it): one too large for that is
	// refused before anything is staged, not staged and left off the tape.
	if info, err := o.st.tx.Files().Stat(req.Path); err == nil && info.Size() > tapefmt.MaxBlobSize && o.t.session.tape != nil {
		return controlapi.Staged{}, controlapi.Failf(http.StatusRequestEntityTooLarge, controlapi.TypeBadRequest,
			"stage-path %s: %d bytes, over the %d MiB the tape keeps of a staged copy (a replay gives the agent a copy of it as it was): "+
				"change it outside the transaction, or in a booth run (jukebox record --booth)", req.Path, info.Size(), tapefmt.MaxBlobSize>>20)
	}
	// A SQLite database in WAL mode keeps its latest changes in its -wal
	// file until a checkpoint: a copy of the database alone misses them,
	// and the commit's database would be overwritten by them the next time
	// it is opened (seen: the committed rows gone, the -wal's back).
	if info, err := o.st.tx.Files().Lstat(req.Path + "-wal"); err == nil && info.Size() > 0 {
		return controlapi.Staged{}, controlapi.Failf(http.StatusConflict, controlapi.TypeUnavailable,
			"stage-path %s: a SQLite database in WAL mode whose latest changes are still in %s-wal (%d bytes): "+
				"a staged copy would not hold them, and they would undo the commit; close the database's connections "+
				"(the last to close checkpoints it) or run PRAGMA wal_checkpoint(TRUNCATE), then stage it", req.Path, req.Path, info.Size())
	}
	f, err := o.st.tx.Files().OpenFile(req.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return controlapi.Staged{}, txError(err)
	}
	f.Close()
	if !slices.Contains(o.st.inPlace, req.Path) {
		o.st.inPlace = append(o.st.inPlace, req.Path)
	}
	return controlapi.Staged{Path: req.Path, Staged: f.Name()}, nil
}

// walConflict is a commit conflict when a database given a staged copy
// (stage-path) has changes in its -wal now: written since it was staged,
// they would be played over the committed database when it is next
// opened, undoing the commit.
func walConflict(ws string, paths []string) error {
	for _, p := range paths {
		wal := p + "-wal"
		if info, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(wal))); err == nil && info.Size() > 0 {
			e := controlapi.Failf(http.StatusConflict, controlapi.TypeCommitConflict,
				"commit: %s holds changes to the SQLite database %s written since it was staged (%d bytes): they would undo the commit; "+
					"roll back and stage again once its connections are closed", wal, p, info.Size())
			e.Conflicts = []controlapi.Conflict{{Path: wal, Reason: "changes written to the database since it was staged"}}
			return e
		}
	}
	return nil
}

// ended is the answer to a request that waited for the transaction
// behind the one that ended it: as if it had come after (not found).
func (o txOps) ended() error {
	return controlapi.Failf(http.StatusNotFound, controlapi.TypeNotFound, "no open transaction %q (it has ended)", o.st.tx.ID())
}

// Commit commits the transaction (sdkTxs.commit).
func (o txOps) Commit(ctx context.Context) (controlapi.Committed, error) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	if o.st.ended {
		return controlapi.Committed{}, o.ended()
	}
	return o.t.commit(context.WithoutCancel(ctx), o.st)
}

// Rollback rolls the transaction back with the reason.
func (o txOps) Rollback(ctx context.Context, req controlapi.Rollback) (controlapi.RolledBack, error) {
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	if o.st.ended {
		return controlapi.RolledBack{}, o.ended()
	}
	if err := o.t.end(context.WithoutCancel(ctx), o.st, req.Reason); err != nil {
		return controlapi.RolledBack{}, txError(err)
	}
	return controlapi.RolledBack{Tx: o.st.tx.ID(), RolledBack: true}, nil
}

// txError is the answer to a transaction's error: a path that leaves the
// workspace is sandbox_violation (403), a missing one not_found, a
// conflict at commit commit_conflict (409), the rest sandbox (500).
func txError(err error) error {
	var ce *sandbox.ConflictError
	switch {
	case errors.As(err, new(*controlapi.Error)):
		return err // said for the agent already
	case errors.Is(err, sandbox.ErrEscape), errors.Is(err, sandbox.ErrStatePath), errors.Is(err, sandbox.ErrInvalidPath), errors.Is(err, sandbox.ErrStateReplaced),
		errors.Is(err, sandbox.ErrForeignState), errors.Is(err, sandbox.ErrRefused), errors.Is(err, sandbox.ErrKept),
		errors.Is(err, fs.ErrPermission):
		return controlapi.Fail(http.StatusForbidden, controlapi.TypeSandboxViolation, err)
	case errors.As(err, &ce):
		e := controlapi.Fail(http.StatusConflict, controlapi.TypeCommitConflict, err)
		e.Conflicts = make([]controlapi.Conflict, len(ce.Conflicts))
		for i, c := range ce.Conflicts {
			e.Conflicts[i] = controlapi.Conflict{Path: c.Path, Reason: c.Reason}
		}
		return e
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, sandbox.ErrClosed): // a transaction ended meanwhile
		return controlapi.Fail(http.StatusNotFound, controlapi.TypeNotFound, err)
	case errors.As(err, new(*pgconn.PgError)):
		return sqlError(err) // PostgreSQL's, at the commit: its SQLSTATE too
	case errors.Is(err, pgtx.ErrFailed):
		e := controlapi.Fail(http.StatusBadRequest, controlapi.TypeSQL, err)
		e.SQLState = "25P02" // in_failed_sql_transaction, as PostgreSQL names it
		return e
	}
	return controlapi.Fail(http.StatusInternalServerError, controlapi.TypeSandbox, err)
}

// Shell runs a command in the booth's shell over the staged workspace.
func (o txOps) Shell(ctx context.Context, req controlapi.Shell) (controlapi.ShellResult, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(req.Command), "")
	if err != nil {
		return controlapi.ShellResult{}, controlapi.BadRequest("shell: %v", err)
	}
	o.st.mu.Lock()
	defer o.st.mu.Unlock()
	var stdout, stderr bytes.Buffer
	// In a --net none booth run the shell's commands get no more network
	// than the agent: they ran in the host's, reaching its loopback
	// services (its PostgreSQL) past --net none and --hermetic. They get
	// loopback alone (nothing carried, no endpoint).
	so := sandbox.ShellOptions{Stdout: &stdout, Stderr: &stderr}
	if b := o.t.session.o.Booth; b != nil && b.Net == sandbox.NetNone {
		so.Net = sandbox.NetNone
	}
	run, err := sandbox.Shell(o.st.tx, so)
	if err != nil {
		return controlapi.ShellResult{}, txError(err)
	}
	code := 0
	if err := run.Run(ctx, file); err != nil {
		var st interp.ExitStatus
		switch {
		case errors.Is(err, sandbox.ErrOneAtATime):
			code = 126 // a pipeline of two commands: the script stopped there, saying so on stderr
		case errors.As(err, &st):
			code = int(st)
		default:
			return controlapi.ShellResult{}, txError(err)
		}
	}
	return controlapi.ShellResult{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String()}, nil
}
