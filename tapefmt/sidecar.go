package tapefmt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Sidecar is the folder beside a tape for files that belong to it but are
// not part of it: NAME.jbx.d for NAME.jbx. It holds the match rules replay
// remembers (match.json) and the turntable's markers (markers.json). Nothing in it
// is covered by the tape's hash chain or seal; a tape opens, verifies and
// replays without it.
func Sidecar(tape string) string { return tape + ".d" }

// ErrNoSidecar: a tape named by a URL has no sidecar folder on this machine.
var ErrNoSidecar = errors.New("a tape in a store has no sidecar folder here (pull it to keep files beside it)")

// WriteSidecarFile writes a file of a sidecar folder whole: into a
// temporary file beside it, renamed over it, the folder made if missing,
// so that a crash leaves the old file or the new one, never half of one.
func WriteSidecarFile(path string, data []byte) error {
	if IsRemote(path) {
		// A tape a URL names (in a store) has no folder beside it here:
		// never make one named after the URL.
		return fmt.Errorf("%s: %w", path, ErrNoSidecar)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// SidecarFile reads the file name of the tape's sidecar folder, wherever
// the tape lies: beside its file, or beside its object in a store (the
// folder travels with the tape). One that is not there is an error
// wrapping fs.ErrNotExist; a tape opened from a reader, with no path,
// has no sidecar folder.
func (t *Tape) SidecarFile(name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("sidecar file %q: not a file name", name)
	}
	if t.remote != nil {
		return t.remote.SidecarFile(name)
	}
	if t.path == "" {
		return nil, fmt.Errorf("sidecar file %s of a tape with no path: %w", name, fs.ErrNotExist)
	}
	return os.ReadFile(filepath.Join(Sidecar(t.path), name))
}
