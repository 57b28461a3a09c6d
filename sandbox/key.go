package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The booth key authenticates the journals that recovery acts on: every
// journal carries a keyed BLAKE2b MAC under a per-user key kept outside
// every workspace, so a journal that arrives with a cloned repository or
// a tarball (or one an earlier release wrote, without a MAC) is listed
// and never applied.

// keySize is the length of the booth key in bytes (a BLAKE2b-256 key).
const keySize = 32

// KeyFile returns where the per-user booth key lives: Options.KeyFile
// when set, else $XDG_STATE_HOME/jukebox/booth.key, else
// ~/.local/state/jukebox/booth.key. A confining booth can hide it from
// the agent.
func KeyFile(opts Options) (string, error) {
	if opts.KeyFile != "" {
		return filepath.Abs(opts.KeyFile)
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "jukebox", "booth.key"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", fmt.Errorf("sandbox: booth key: no home directory: set XDG_STATE_HOME (%v)", err)
	}
	return filepath.Join(home, ".local", "state", "jukebox", "booth.key"), nil
}

// errNoKey reports that the booth key has not been made yet: no journal
// this user's jukebox wrote can exist.
var errNoKey = errors.New("sandbox: no booth key")

// loadKey reads the booth key, first making one when create is set and
// there is none. It refuses a key that is a symlink, is not a regular
// file of keySize bytes, is not owned by this user or is readable by
// anyone else, one in a directory others can write, and one inside the
// workspace w.
func loadKey(opts Options, w *workspace, create bool) ([]byte, error) {
	name, err := KeyFile(opts)
	if err != nil {
		return nil, err
	}
	refuse := func(why string, args ...any) error {
		return fmt.Errorf("sandbox: booth key %s: %s", name, fmt.Sprintf(why, args...))
	}
	dir := filepath.Dir(name)
	inside := func() bool { // w != nil; checked before the folder is made, and after
		rel, err := filepath.Rel(w.root, resolvedPath(dir))
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if w != nil && inside() {
		return nil, refuse("it lies inside the workspace %s: set XDG_STATE_HOME to a directory outside it", w.root)
	}
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, refuse("%v", err)
		}
	}
	if w != nil && inside() {
		return nil, refuse("it lies inside the workspace %s: set XDG_STATE_HOME to a directory outside it", w.root)
	}
	if fi, err := os.Stat(dir); err == nil {
		if uid, ok := fileOwner(fi); ok && uid != os.Geteuid() {
			return nil, refuse("its directory is owned by uid %d, not by this user", uid)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return nil, refuse("its directory can be written by others (%v): chmod go-w %s", fi.Mode().Perm(), dir)
		}
	}
	key, err := readKey(name, refuse)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, errNoKey
		}
		if err := makeKey(name); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, refuse("create: %v", err)
		}
		key, err = readKey(name, refuse)
	}
	return key, err
}

// resolvedPath is p with the symlinks of its longest existing ancestor
// resolved, the rest (not made yet) joined as it is.
func resolvedPath(p string) string {
	var rest []string
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(append([]string{p}, rest...)...)
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// readKey opens the key without following a symlink and checks it.
func readKey(name string, refuse func(string, ...any) error) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		if fi, lerr := os.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, refuse("it is a symlink: refused")
		}
		return nil, refuse("%v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, refuse("%v", err)
	}
	switch uid, ok := fileOwner(fi); {
	case !fi.Mode().IsRegular():
		return nil, refuse("not a regular file")
	case ok && uid != os.Geteuid():
		return nil, refuse("owned by uid %d, not by this user", uid)
	case fi.Mode().Perm()&0o077 != 0:
		return nil, refuse("readable or writable by others (%v): chmod 600 %s", fi.Mode().Perm(), name)
	case fi.Size() != keySize:
		return nil, refuse("%d bytes, want %d", fi.Size(), keySize)
	}
	key := make([]byte, keySize)
	if _, err := io.ReadFull(f, key); err != nil {
		return nil, refuse("%v", err)
	}
	return key, nil
}

// makeKey writes a new random key under a temporary name (O_EXCL, 0600)
// and links it into place, which fails if another process won the race:
// a key, once there, is never replaced.
func makeKey(name string) error {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return err
	}
	tmp := name + ".tmp-" + hex.EncodeToString(r[:])
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := writeSynced(tmp, key, os.O_EXCL|oNoFollow); err != nil {
		return err
	}
	if err := os.Link(tmp, name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}
