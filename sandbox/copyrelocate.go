package sandbox

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// A copy run's agent works at the copy's absolute path, and tools write
// it down: a venv's script shebangs, pyvenv.cfg and activate scripts, a
// symlink to an absolute path. The copy is gone after the run, so the
// fold rewrites the copy's root path to the real workspace's in what the
// agent created or changed (never in what it left alone): in text files
// and symlink targets, each whole occurrence (followed by "/" or by a
// byte that cannot continue a file name). A binary file (one holding a
// NUL byte, or over maxRelocate) that holds the path is left as it is
// and listed in ExecResult.CopyPaths, which Exec's notice names.

// maxRelocate is the largest file rewritten; a larger one that holds the
// copy's path is listed instead.
const maxRelocate = 32 << 20

// copyRoots are the copy's root paths to rewrite, as given and resolved.
func (r *copyRun) copyRoots() [][]byte {
	out := [][]byte{[]byte(r.root)}
	if res, err := filepath.EvalSymlinks(r.root); err == nil && res != r.root {
		out = append(out, []byte(res))
	}
	return out
}

// relocateTarget is a symlink target with the copy's root rewritten.
func (r *copyRun) relocateTarget(target string) string {
	b := []byte(target)
	for _, root := range r.copyRoots() {
		b, _ = rewriteRoot(b, root, []byte(r.tx.ws.root))
	}
	return string(b)
}

// relocate rewrites the copy's root in the regular file abs (the copy of
// p, which fi describes) that the agent wrote, keeping its mtime; a
// binary file holding it is added to r.copyPaths.
func (r *copyRun) relocate(p, abs string, fi fs.FileInfo) error {
	if fi.Size() == 0 {
		return nil
	}
	if fi.Mode().Perm()&0o600 != 0o600 { // the agent's own file: readable to it again
		if err := os.Chmod(abs, fi.Mode().Perm()|0o600); err != nil {
			return err
		}
		defer os.Chmod(abs, fi.Mode().Perm())
	}
	if fi.Size() > maxRelocate {
		if found, err := holdsAny(abs, r.copyRoots()); err != nil || !found {
			return err
		}
		r.copyPaths = append(r.copyPaths, p)
		return nil
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return err
	}
	changed := false
	for _, root := range r.copyRoots() {
		var c bool
		b, c = rewriteRoot(b, root, []byte(r.tx.ws.root))
		changed = changed || c
	}
	switch {
	case !changed:
		return nil
	case bytes.IndexByte(b, 0) >= 0:
		r.copyPaths = append(r.copyPaths, p)
		return nil
	}
	if err := os.WriteFile(abs, b, 0); err != nil {
		return err
	}
	return os.Chtimes(abs, fi.ModTime(), fi.ModTime())
}

// rewriteRoot replaces each whole occurrence of from in b with to.
func rewriteRoot(b, from, to []byte) ([]byte, bool) {
	var out []byte
	changed := false
	for {
		i := bytes.Index(b, from)
		if i < 0 {
			break
		}
		end := i + len(from)
		if end < len(b) && nameByte(b[end]) {
			out, b = append(out, b[:end]...), b[end:]
			continue
		}
		out, b, changed = append(append(out, b[:i]...), to...), b[end:], true
	}
	if !changed {
		return b, false
	}
	return append(out, b...), true
}

// nameByte reports whether c continues a file name (so that a path the
// copy's root is a prefix of, such as <root>2, is not rewritten).
func nameByte(c byte) bool {
	return c >= 0x80 || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '+' || c == '~' || c == '@'
}

// holdsAny reports whether the file abs holds any of needles, reading it
// a megabyte at a time.
func holdsAny(abs string, needles [][]byte) (bool, error) {
	f, err := os.Open(abs)
	if err != nil {
		return false, err
	}
	defer f.Close()
	keep := 0
	for _, n := range needles {
		keep = max(keep, len(n))
	}
	buf := make([]byte, 0, 1<<20+keep)
	for {
		n, err := io.ReadFull(f, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		for _, needle := range needles {
			if bytes.Contains(buf, needle) {
				return true, nil
			}
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		buf = append(buf[:0], buf[len(buf)-keep:]...)
	}
}
