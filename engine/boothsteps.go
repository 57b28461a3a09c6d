package engine

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// stepRecorder writes the booth's step records: at each step boundary
// (a model call received, the agent ended) the paths of the workspace
// whose state changed since the boundary before, as file.change frames
// with Step set (FORMAT.md, 10.3), apart from the committed change set.
type stepRecorder struct {
	s     *session
	txID  string
	mu    sync.Mutex
	steps *sandbox.Steps
	n     int
	err   error // the first read that failed; later boundaries are skipped
}

// boundary reads the staging area and records what changed.
func (r *stepRecorder) boundary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	cs, err := r.steps.Next()
	if err != nil {
		r.err = err
		if n := r.s.o.Booth.Notice; n != nil {
			fmt.Fprintf(n, "jukebox: booth: the workspace could not be read at step %d: %v; no more step records\n", r.n+1, err)
		}
		return
	}
	r.n++
	for i := range cs {
		r.s.recordStep(r.txID, r.n, &cs[i])
	}
}

// startSteps records step records for the rest of the run: before each
// model call the proxy receives, and once more when end is called.
// Copy-mode runs get none (the agent writes elsewhere until it ends).
func (s *session) startSteps(tx *sandbox.Tx, mode sandbox.Mode) (end func()) {
	if s.tape == nil || mode == sandbox.ModeCopy || mode == sandbox.ModeReflink {
		return func() {}
	}
	r := &stepRecorder{s: s, txID: tx.ID(), steps: tx.Steps()}
	f := r.boundary
	s.proxy.beforeCall.Store(&f)
	return func() {
		s.proxy.beforeCall.Store(nil)
		r.boundary()
	}
}

// recordStep writes one step record: the change c at boundary n, or a
// restore.
func (s *session) recordStep(txID string, n int, c *sandbox.Change) {
	if c.Op == sandbox.OpRestore {
		s.appendFrame(tapefmt.FileChange{Tx: txID, Op: tapefmt.OpRestore, Path: c.Path, Step: n})
		return
	}
	s.appendFrame(s.changeFrame(txID, "", c, n, nil))
}

// snapshot writes the workspace as the run found it (record --snapshot):
// ws.snapshot frames listing every path, each file's content a blob.
func (s *session) snapshot(tx *sandbox.Tx) error {
	if s.tape == nil {
		return nil
	}
	skip := s.protected()
	var files []tapefmt.SnapshotEntry
	err := tx.WalkStart(func(rel, abs string, fi fs.FileInfo) error {
		for _, p := range skip {
			if strings.HasPrefix(abs, p) { // the tape and its sidecars
				return nil
			}
		}
		e, ok := tapefmt.EntryOf(rel, fi)
		switch {
		case !ok:
			return nil // fifos, sockets, devices: never part of a change set either
		case e.Type == "symlink":
			e.Target, _ = os.Readlink(abs)
		case e.Type == "file" && fi.Size() <= tapefmt.MaxBlobSize:
			if data, err := os.ReadFile(abs); err == nil {
				e.Body, _ = s.tape.PutBlob("file "+rel, data)
			}
		}
		files = append(files, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("booth: snapshot of the workspace: %w", err)
	}
	parts := max(1, (len(files)+snapshotPart-1)/snapshotPart)
	for i := range parts {
		part := files[i*snapshotPart : min(len(files), (i+1)*snapshotPart)]
		s.appendFrame(tapefmt.Snapshot{Tx: tx.ID(), Workspace: s.workspace(), Part: i + 1, Parts: parts, Files: part})
	}
	return nil
}

// snapshotPart is the most paths one ws.snapshot frame lists.
const snapshotPart = 20000

// changeFrame is the file.change frame of c (step 0: of the change set),
// its content as a blob: the staged content's, or data when it is not nil.
func (s *session) changeFrame(txID, root string, c *sandbox.Change, step int, data []byte) tapefmt.FileChange {
	fc := tapefmt.FileChange{Tx: txID, Root: root, Op: c.Op, Path: c.Path, Mode: c.UnixMode(), Size: c.Size, Target: c.Target, Link: c.Link, Step: step}
	if !c.Mtime.IsZero() {
		fc.MtimeNs = c.Mtime.UnixNano()
	}
	if c.Xattrs != nil {
		fc.Xattrs = make(map[string]tapefmt.Bytes, len(c.Xattrs))
		for name, v := range c.Xattrs {
			fc.Xattrs[name] = v
		}
	}
	if s.tape != nil && c.Op == sandbox.OpWrite && data != nil {
		fc.Body, _ = s.tape.PutBlob("file "+c.Path, data)
	} else if s.tape != nil && c.Op == sandbox.OpWrite && c.Size <= tapefmt.MaxBlobSize {
		if r, err := c.Open(); err == nil {
			data, rerr := io.ReadAll(r)
			r.Close()
			if rerr == nil {
				fc.Body, _ = s.tape.PutBlob("file "+c.Path, data)
			}
		}
	}
	return fc
}
