package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkWriteFile is a staged write of a 4 KiB file (Files.WriteFile,
// what the control API's write runs) beside a plain one (os.WriteFile)
// into a folder as full: the floor the booth sets under the Python SDK's
// staged write (python/bench/sdk_bench.py), whose target is 2x a plain
// write.
func BenchmarkWriteFile(b *testing.B) {
	data := make([]byte, 4096)
	b.Run("plain", func(b *testing.B) {
		dir := b.TempDir()
		b.SetBytes(int64(len(data)))
		for i := range b.N {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f-%d.txt", i)), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("staged", func(b *testing.B) {
		tx, err := Begin(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		f := tx.Files()
		b.SetBytes(int64(len(data)))
		for i := range b.N {
			if err := f.WriteFile(fmt.Sprintf("f-%d.txt", i), data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Into folders the workspace has, three deep (src/pkg/mod/f-N.txt):
	// the staged view looks each folder up on both sides.
	nested := func(b *testing.B, write func(dir, name string) error, dir string) {
		must := os.MkdirAll(filepath.Join(dir, "src", "pkg", "mod"), 0o755)
		if must != nil {
			b.Fatal(must)
		}
		b.SetBytes(int64(len(data)))
		for i := range b.N {
			if err := write(dir, fmt.Sprintf("src/pkg/mod/f-%d.txt", i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("plain-nested", func(b *testing.B) {
		nested(b, func(dir, name string) error { return os.WriteFile(filepath.Join(dir, name), data, 0o644) }, b.TempDir())
	})
	b.Run("staged-nested", func(b *testing.B) {
		ws := b.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, "src", "pkg", "mod"), 0o755); err != nil {
			b.Fatal(err)
		}
		tx, err := Begin(ws, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		f := tx.Files()
		nested(b, func(_, name string) error { return f.WriteFile(name, data, 0o644) }, ws)
	})
}
