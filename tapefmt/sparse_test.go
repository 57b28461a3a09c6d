package tapefmt

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestSparseTableNotHeld: a file of a few kilobytes on disk whose footer
// claims a frame table as large as the (sparse) file made ls, verify
// --quick and show hold the whole table, twice its size, before its
// checksum failed (a 17 GiB one ran the machine out of memory). A table
// that does not check is refused without being held.
func TestSparseTableNotHeld(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.jbx")
	if err := CreateWith(real, Options{}, func(w *Writer) error {
		_, err := w.Append(0, RunStart{Argv: []string{"agent"}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	const table = 256 << 20 // frames claimed: 16 MiB of them
	size := int64(fileHeaderSize + table + footerSize)
	f, err := os.Create(filepath.Join(dir, "sparse.jbx"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(head[:fileHeaderSize])
	ft := footer{recordsEnd: fileHeaderSize, frames: table / frameEntrySize, blobTable: fileHeaderSize + table, frameCRC: 1}
	if _, err := f.WriteAt(ft.marshal(), size-footerSize); err != nil {
		t.Fatal(err)
	}
	f.Close()
	tp, err := Open(f.Name())
	if err != nil {
		t.Fatalf("the sparse file does not open as a tape (the test's footer): %v", err)
	}
	defer tp.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = tp.loadFrameTable()
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a frame table that does not check was read")
	}
	if held := after.TotalAlloc - before.TotalAlloc; held > 16<<20 {
		t.Errorf("%d MiB allocated to refuse a %d MiB table", held>>20, table>>20)
	}
}
