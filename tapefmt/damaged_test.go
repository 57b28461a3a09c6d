package tapefmt

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRecoveryTellsDamageFromNotClosed: a tape whose footer was written
// whole and then damaged (a flipped byte) is Damaged; one cut inside its
// index (a Close cut short), or inside a record (a torn write), is not.
// Every such tape was reported "not closed", which hid a tampered one.
func TestRecoveryTellsDamageFromNotClosed(t *testing.T) {
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.jbx")
	err := CreateWith(whole, Options{Sync: SyncNever}, func(w *Writer) error {
		w.Append(0, RunStart{Argv: []string{"agent"}})
		w.Append(0, Output{Fd: 1, Data: []byte("hello\n")})
		_, err := w.Append(0, RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	flipped[len(flipped)-60] ^= 0xff
	for _, c := range []struct {
		name    string
		bytes   []byte
		damaged bool
	}{
		{"footer flipped", flipped, true},
		{"index cut", data[:len(data)-100], false},
		{"record torn", data[:100], false},
	} {
		path := filepath.Join(dir, "t.jbx")
		if err := os.WriteFile(path, c.bytes, 0o644); err != nil {
			t.Fatal(err)
		}
		tp, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		rec := tp.Recovered()
		tp.Close()
		if rec == nil || rec.Damaged != c.damaged {
			t.Errorf("%s: recovery %+v, want damaged %v", c.name, rec, c.damaged)
		}
	}
}
