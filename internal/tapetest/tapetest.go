// Package tapetest checks, in tests and benchmarks, that a tape they wrote
// reads back whole: every test or benchmark that writes a tape calls Verify
// on it afterwards, so a writer that emits what its reader refuses fails
// the suite where it happens instead of in a user's hands.
package tapetest

import (
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Verify opens the tape at path and checks everything a reader can: every
// CRC, the hash chain, the index and footer, and every blob decoded and
// re-hashed, and every frame's payload decoded with each blob it names. A
// tape without a footer fails. It returns the report for further checks.
func Verify(tb testing.TB, path string) *tapefmt.VerifyReport {
	tb.Helper()
	return verify(tb, path, false)
}

// VerifyTorn is Verify for a tape a test tore on purpose: it opens by
// recovery, and what it keeps must check as a whole tape would.
func VerifyTorn(tb testing.TB, path string) *tapefmt.VerifyReport {
	tb.Helper()
	return verify(tb, path, true)
}

func verify(tb testing.TB, path string, torn bool) *tapefmt.VerifyReport {
	tb.Helper()
	t, err := tapefmt.Open(path)
	if err != nil {
		tb.Fatalf("tape %s does not open: %v", path, err)
	}
	defer t.Close()
	if rec := t.Recovered(); rec != nil && !torn {
		tb.Fatalf("tape %s has no footer: %d bytes dropped after offset %d", path, rec.BytesDropped(), rec.ValidEnd)
	}
	rep, err := t.Verify(tapefmt.VerifyOptions{Blobs: true})
	if err != nil {
		tb.Fatalf("tape %s does not verify: %v", path, err)
	}
	for f, err := range t.All() {
		if err != nil {
			tb.Fatalf("tape %s: %v", path, err)
		}
		p, err := f.Decode()
		if err != nil {
			tb.Fatalf("tape %s: frame %d (%s) does not decode: %v", path, f.Seq, f.Kind, err)
		}
		for _, h := range tapefmt.BlobRefs(p) {
			if _, err := t.Blob(h); err != nil {
				tb.Fatalf("tape %s: frame %d (%s): blob %s: %v", path, f.Seq, f.Kind, h.Short(), err)
			}
		}
	}
	return rep
}
