package sandbox

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// DefaultStateDir is where, relative to the workspace, booth transactions
// keep their staging areas and journals unless Options.StateRoot says
// otherwise. It is never part of a change set.
const DefaultStateDir = ".jukebox/booth"

// maxSymlinkHops bounds symlink resolution, as Linux's ELOOP does.
const maxSymlinkHops = 40

// cleanRel turns a caller's name into a clean slash-separated path relative
// to the workspace, refusing anything that is absolute, climbs out with
// "..", holds a NUL byte, or points into the booth state directory.
// The root itself comes back as ".".
func (w *workspace) cleanRel(op, name string) (string, error) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", pathErr(op, name, ErrInvalidPath)
	}
	if name == "" {
		return "", pathErr(op, name, ErrInvalidPath)
	}
	slashed := filepath.ToSlash(name)
	if path.IsAbs(slashed) {
		return "", pathErr(op, name, ErrEscape)
	}
	c := path.Clean(slashed)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", pathErr(op, name, ErrEscape)
	}
	if w.isState(c) {
		return "", pathErr(op, name, ErrStatePath)
	}
	return c, nil
}

// cleanFile is cleanRel that also refuses the workspace root.
func (w *workspace) cleanFile(op, name string) (string, error) {
	c, err := w.cleanRel(op, name)
	if err == nil && c == "." {
		return "", pathErr(op, name, ErrInvalidPath)
	}
	return c, err
}

// isState reports whether rel is the state directory or inside it.
func (w *workspace) isState(rel string) bool {
	if w.stateRel == "" {
		return false
	}
	return rel == w.stateRel || strings.HasPrefix(rel, w.stateRel+"/")
}

// foreignState reports whether rel is a folder named as jukebox names
// its own state folder (`.jukebox`) other than the workspace's own at its
// top: another workspace's booth transactions, journals and records,
// whose staged files a later `booth commit` there applies. A run in this
// workspace never commits there (foreignStateRefusal); the workspace's
// own .jukebox, beside its state, is listed and marked as before.
func (w *workspace) foreignState(rel string) bool {
	if path.Base(rel) != ".jukebox" {
		return false
	}
	return rel != ".jukebox" || (w.stateRel != DefaultStateDir && !w.isState(rel))
}

// inForeignState reports whether rel or a folder it is in is another
// workspace's state folder (foreignState): what a commit refuses there.
func (w *workspace) inForeignState(rel string) bool {
	for p := rel; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if w.foreignState(p) {
			return true
		}
	}
	return false
}

// symlinkTarget maps a symlink found at rel (whose target is target) to the
// workspace-relative path it points at, or ErrEscape if it leaves.
func (w *workspace) symlinkTarget(rel, target string) (string, error) {
	var joined string
	if filepath.IsAbs(target) {
		r, err := filepath.Rel(w.root, filepath.Clean(target))
		if err != nil {
			return "", pathErr("resolve", rel, ErrEscape)
		}
		joined = filepath.ToSlash(r)
	} else {
		joined = path.Join(path.Dir(rel), filepath.ToSlash(target))
	}
	if joined == ".." || strings.HasPrefix(joined, "../") || path.IsAbs(joined) {
		return "", pathErr("resolve", rel, ErrEscape)
	}
	if w.isState(joined) {
		return "", pathErr("resolve", rel, ErrStatePath)
	}
	return joined, nil
}

// splitPath splits a clean relative path into its components.
func splitPath(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// joinRel joins a parent and a child name, treating "." as the root.
func joinRel(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// Within reports whether the clean absolute path p is dir or lies below
// it: the one test of containment of the booth and its flags.
func Within(p, dir string) bool { return nsinit.Within(p, dir) }
