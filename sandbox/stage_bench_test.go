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
}
