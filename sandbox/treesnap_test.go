//go:build linux

package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// snapCutoff splits modification times in a tree snapshot: one before it
// was set on purpose (by the fixture or by the agent's touch -d) and is
// compared exactly; one after it is the time of the run, which a plain
// run and a booth run cannot share, and shows as "recent".
var snapCutoff = time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)

// snapTree describes every entry under root (the booth's state directory
// left out, and root itself, whose time the state directory changes), one
// line each, sorted: path, type and mode as ls shows them (setuid, setgid
// and sticky too), content hash or link target, every extended attribute
// (overlayfs's own, which must never be there, included), the other names
// of a file with several, and the modification time.
func snapTree(t testing.TB, root string) []string {
	t.Helper()
	type node struct {
		rel  string
		fi   fs.FileInfo
		line string
	}
	var nodes []node
	names := map[uint64][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if rel == ".jukebox" {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		line := rel + " " + snapMode(fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			line += " " + hex.EncodeToString(sum[:6])
			if linkCount(fi) > 1 {
				names[inode(fi)] = append(names[inode(fi)], rel)
			}
		}
		line += " xattrs{" + strings.Join(allXattrs(t, p), " ") + "}"
		if mt := fi.ModTime(); mt.Before(snapCutoff) {
			line += " mtime=" + mt.UTC().Format(time.RFC3339Nano)
		} else {
			line += " mtime=recent"
		}
		nodes = append(nodes, node{rel, fi, line})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, n := range nodes {
		if group := names[inode(n.fi)]; n.fi.Mode().IsRegular() && linkCount(n.fi) > 1 {
			others := slices.DeleteFunc(slices.Clone(group), func(s string) bool { return s == n.rel })
			n.line += fmt.Sprintf(" links=%d%v", linkCount(n.fi), others)
		}
		lines = append(lines, n.line)
	}
	sort.Strings(lines)
	return lines
}

// snapMode is ls's mode string, with s/S and t/T.
func snapMode(m fs.FileMode) string {
	kind := "-"
	switch {
	case m.IsDir():
		kind = "d"
	case m&fs.ModeSymlink != 0:
		kind = "l"
	}
	return kind + lsMode(m)[1:]
}

// allXattrs lists name=value of every extended attribute of p the caller
// can see (overlayfs's included), without following a symlink.
func allXattrs(t testing.TB, p string) []string {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		if err == unix.ENOTSUP {
			return nil
		}
		t.Fatalf("listxattr %s: %v", p, err)
	}
	var out []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" || strings.HasPrefix(name, "security.") {
			continue // labels the system sets, not the agent
		}
		v := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			t.Fatalf("getxattr %s %s: %v", p, name, err)
		}
		out = append(out, fmt.Sprintf("%s=%q", name, v[:m]))
	}
	sort.Strings(out)
	return out
}

// diffSnaps returns the lines only a has and only b has, for a message.
func diffSnaps(a, b []string) string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// overlayXattrsUnder lists every entry under root (the state directory
// left out) that carries an overlayfs attribute.
func overlayXattrsUnder(t testing.TB, root string) []string {
	t.Helper()
	var bad []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		if err != nil || filepath.ToSlash(rel) == ".jukebox" {
			return filepath.SkipDir
		}
		for _, x := range allXattrs(t, p) {
			name, _, _ := strings.Cut(x, "=")
			if isOverlayXattr(name) {
				bad = append(bad, rel+" "+x)
			}
		}
		return nil
	})
	return bad
}
