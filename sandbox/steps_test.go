//go:build linux

package sandbox

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stepText lists a step's changes one a line, "op path" and, for a
// write, its content as it reads now.
func stepText(t testing.TB, cs []Change) string {
	t.Helper()
	var lines []string
	for _, c := range cs {
		line := fmt.Sprintf("%s %s", c.Op, c.Path)
		if c.Op == OpWrite {
			r, err := c.Open()
			must(t, err)
			b, _ := io.ReadAll(r)
			r.Close()
			line += " " + string(b)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// TestStepsReportWhatChangedSinceTheLastBoundary: each Next says only the
// paths whose state changed since the one before, a file written then
// written again shows its new content, and a path undone is a restore.
func TestStepsReportWhatChangedSinceTheLastBoundary(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, map[string]string{"a.txt": "a0", "b.txt": "b0", "d/x.txt": "x0"})
	tx, err := Begin(ws, Options{})
	must(t, err)
	defer tx.Rollback(t.Context())
	f, st := tx.Files(), tx.Steps()
	next := func(want string) {
		t.Helper()
		cs, err := st.Next()
		must(t, err)
		if got := stepText(t, cs); got != want {
			t.Fatalf("step changes:\n%s\nwant:\n%s", got, want)
		}
	}
	next("")
	must(t, f.WriteFile("a.txt", []byte("a1"), 0o644))
	must(t, f.WriteFile("new.txt", []byte("n1"), 0o644))
	next("write a.txt a1\nwrite new.txt n1")
	next("") // nothing since
	must(t, f.WriteFile("a.txt", []byte("a2!"), 0o644))
	must(t, f.Remove("b.txt"))
	must(t, f.Remove("new.txt"))
	next("write a.txt a2!\ndelete b.txt\nrestore new.txt")
	must(t, f.Rename("d/x.txt", "d/y.txt"))
	must(t, f.WriteFile("a.txt", []byte("a0"), 0o644))
	// a.txt has its first content again, with a new mtime: a chmod
	next("chmod a.txt\ndelete d/x.txt\nwrite d/y.txt x0")
}

// BenchmarkStepsNext is the cost of one step boundary: a workspace of
// 10,000 files, 20 of them written by the agent, one more written
// between boundaries. Its peer, hashing the whole workspace, is what a
// boundary would cost without the staging area's upper layer.
func BenchmarkStepsNext(b *testing.B) {
	ws := b.TempDir()
	files := map[string]string{}
	for i := range 10000 {
		files[fmt.Sprintf("d%02d/f%04d.txt", i%100, i)] = strings.Repeat("x", 1024)
	}
	mkTree(b, ws, files)
	tx, err := Begin(ws, Options{})
	must(b, err)
	defer tx.Rollback(b.Context())
	f := tx.Files()
	for i := range 20 {
		must(b, f.WriteFile(fmt.Sprintf("d%02d/f%04d.txt", i, i*100+i), []byte(strings.Repeat("y", 1024)), 0o644))
	}
	b.Run("steps", func(b *testing.B) {
		st := tx.Steps()
		for i := 0; b.Loop(); i++ {
			must(b, f.WriteFile("out.txt", fmt.Appendf(nil, "%d", i), 0o644))
			if _, err := st.Next(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hash-workspace", func(b *testing.B) {
		for b.Loop() {
			hashTree(b, ws)
		}
	})
}

// hashTree reads and hashes every file under root.
func hashTree(b *testing.B, root string) {
	h := sha256.New()
	must(b, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		h.Write(data)
		return err
	}))
}
