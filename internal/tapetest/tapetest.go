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
// CRC, the hash chain, the index and footer, every frame's payload decoded
// with each blob it names present, and every blob decoded and re-hashed. A
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
	// With Blobs, Verify decodes every payload, checks that each blob it
	// names is on the tape, and decodes and re-hashes every blob.
	rep, err := t.Verify(tapefmt.VerifyOptions{Blobs: true})
	if err != nil {
		tb.Fatalf("tape %s does not verify: %v", path, err)
	}
	return rep
}
