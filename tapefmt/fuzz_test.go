package tapefmt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// seedTapes adds the sample tapes and those of earlier releases (and their
// cut-down variants) to f.
func seedTapes(f *testing.F) {
	paths, _ := filepath.Glob("../testdata/tapes/*.jbx")
	old, _ := filepath.Glob("../testdata/compat/*.jbx") // written by earlier releases
	paths = append(paths, old...)
	if len(paths) == 0 {
		f.Fatal("no seed tapes in testdata/tapes: run go run ./internal/tapegen/gen")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(b[:len(b)-footerSize+7])
	}
}

// exercise opens b and touches everything a reader can: it must return
// errors, never panic, and stay within bounded memory.
func exercise(t *testing.T, b []byte) {
	tp, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Fatalf("open error is not a FormatError: %v", err)
		}
		return
	}
	for f, err := range tp.All() {
		if err != nil {
			break
		}
		if p, err := f.Decode(); err == nil {
			for _, h := range BlobRefs(p) {
				_, _ = tp.Blob(h)
			}
		}
	}
	for range tp.Frames(KindLLMRequest) {
	}
	if tp.Len() > 0 {
		_, _ = tp.Frame(tp.Len() - 1)
	}
	_, _ = tp.Verify(VerifyOptions{Blobs: true})
}

func FuzzReader(f *testing.F) {
	seedTapes(f)
	f.Fuzz(exercise)
}

// FuzzRecoverScan aims at the scanner: inputs keep a valid header and lose
// their footer, so every one of them is opened by scanning.
func FuzzRecoverScan(f *testing.F) {
	seedTapes(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < fileHeaderSize {
			return
		}
		h := fileHeader{Version: Version}
		b = append(h.marshal(), b[fileHeaderSize:]...)
		if len(b) >= footerSize && [8]byte(b[len(b)-footerSize:]) == footerMagic {
			b[len(b)-footerSize] ^= 0xff // break the footer magic
		}
		idx, rec := recoverScan(bytes.NewReader(b), int64(len(b)))
		if rec.ValidEnd > int64(len(b)) || len(idx.frames)/frameEntrySize != rec.FramesKept {
			t.Fatalf("recovery out of bounds: %+v", rec)
		}
		exercise(t, b)
	})
}
