// Package sidecar is the folder beside a tape for files that belong to it
// but are not part of it: NAME.jbx.d for NAME.jbx. It holds the match rules
// replay remembers (match.json), the turntable's markers (markers.json) and
// a bisect's verdicts (bisect.json). Nothing in it is covered by the tape's
// hash chain or seal; a tape opens, verifies and replays without it. A
// store keeps the folder beside the tape's object, and a tape opened from
// there reads it there.
package sidecar

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Dir is the sidecar folder of the tape at path.
func Dir(tape string) string { return tape + ".d" }

// ErrRemote: a tape named by a URL has no sidecar folder on this machine.
var ErrRemote = errors.New("a tape in a store has no sidecar folder here (pull it to keep files beside it)")

// ErrNotFolder: what stands at the place of a tape's sidecar folder is a
// symbolic link or a file, not a folder of the tape's: nothing is written
// through it or read from it (a link planted beside a tape made push send
// the files of the folder it named, ~/.aws, to a store, and write into
// it).
var ErrNotFolder = errors.New("a symbolic link or a file stands there, not the tape's folder: remove it")

// Check says whether dir, a tape's sidecar folder, is one to use: nil
// when it is a folder or is not there, ErrNotFolder when a link or a
// file stands there.
func Check(dir string) error {
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s: %w", dir, ErrNotFolder)
	}
	return nil
}

// WriteFile writes a file of a sidecar folder whole: into a temporary
// file beside it, renamed over it, the folder made if missing, so that a
// crash leaves the old file or the new one, never half of one. A folder
// that is a link is refused (Check).
func WriteFile(path string, data []byte) error {
	if tapefmt.IsRemote(path) {
		// A tape a URL names (in a store) has no folder beside it here:
		// never make one named after the URL.
		return fmt.Errorf("%s: %w", path, ErrRemote)
	}
	dir := filepath.Dir(path)
	if err := Check(dir); err != nil {
		return err
	}
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

// Remote is what a store's reader (tapefmt.RemoteReader) has when its
// store keeps sidecar folders: the file name of the tape's folder, an
// error wrapping fs.ErrNotExist when it is not there.
type Remote interface {
	SidecarFile(name string) ([]byte, error)
}

// Read reads the file name of the tape's sidecar folder, wherever the tape
// lies: beside its file, or beside its object in a store (the folder
// travels with the tape). One that is not there is an error wrapping
// fs.ErrNotExist; a tape opened from a reader, with no path, has no
// sidecar folder.
func Read(t *tapefmt.Tape, name string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("sidecar file %q: not a file name", name)
	}
	if r := t.Remote(); r != nil {
		if s, ok := r.(Remote); ok {
			return s.SidecarFile(name)
		}
		return nil, fmt.Errorf("sidecar file %s: %w", name, fs.ErrNotExist)
	}
	if t.Path() == "" {
		return nil, fmt.Errorf("sidecar file %s of a tape with no path: %w", name, fs.ErrNotExist)
	}
	if err := Check(Dir(t.Path())); err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(Dir(t.Path()), name))
}
