// Package tapetest checks, in tests and benchmarks, that a tape they wrote
// reads back whole: every test or benchmark that writes a tape calls Verify
// on it afterwards, so a writer that emits what its reader refuses fails
// the suite where it happens instead of in a user's hands. It also writes
// the tapes of a shape several of them need (WriteSteps).
package tapetest

import (
	"bytes"
	"os"
	"strings"
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

// DamageBlob flips the first stored byte of blob h in the tape at path, so
// that its record fails its checksum (and so does any blob stored as a delta
// of it), and returns the record's offset. Tests that damage a tape verify
// it whole first.
func DamageBlob(tb testing.TB, path string, h tapefmt.Hash) int64 {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	// The hash sits at byte 8 of the blob record's 48-byte header; the
	// first occurrence is the record, before the index that repeats it.
	at := bytes.Index(b, h[:]) - 8
	if at < 0 || b[at] != 'B' {
		tb.Fatalf("tape %s: blob %s not found as a record", path, h.Short())
	}
	b[at+48] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return int64(at)
}

// NoSecrets fails tb if any of secrets appears on the tape at path: in a
// frame's payload as stored, in the payload's decoded form (Output data is
// base64 in JSON), or in any blob the frames name, decoded. It returns the
// number of frames it read, so that a caller can tell it read something.
func NoSecrets(tb testing.TB, path string, secrets ...string) int {
	tb.Helper()
	t, err := tapefmt.Open(path)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	defer t.Close()
	n := 0
	for i := range t.Len() {
		f, err := t.Frame(i)
		if err != nil {
			tb.Fatalf("%s: frame %d: %v", path, i, err)
		}
		n++
		texts := []string{string(f.Payload)}
		p, err := f.Decode()
		if err != nil {
			tb.Fatalf("%s: frame %d: %v", path, i, err)
		}
		if o, ok := p.(*tapefmt.Output); ok {
			texts = append(texts, string(o.Data))
		}
		for _, h := range tapefmt.BlobRefs(p) {
			b, err := t.Blob(h)
			if err != nil {
				tb.Fatalf("%s: frame %d: blob %s: %v", path, i, h, err)
			}
			texts = append(texts, string(b))
		}
		for _, text := range texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					tb.Errorf("%s: frame %d (%s) holds the secret %q", path, i, f.Kind, s)
				}
			}
		}
	}
	return n
}

// WriteCalls writes a tape of start, a model call for each of models (an
// OpenAI chat completion that used 1,000 input and 100 output tokens),
// and the run's end, and verifies it. With start's Mode and Parent of a
// fork, it is a fork's tape.
func WriteCalls(tb testing.TB, path string, start tapefmt.RunStart, models ...string) {
	tb.Helper()
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		if _, err := w.Append(0, start); err != nil {
			return err
		}
		for i, model := range models {
			if _, err := w.Append(0, tapefmt.LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: model}); err != nil {
				return err
			}
			if _, err := w.Append(0, tapefmt.LLMResponse{Call: uint64(i), Status: 200, Model: model, Usage: tapefmt.Usage{Input: 1000, Output: 100}}); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	Verify(tb, path)
}

// WritePayloads writes a tape of payloads, in order, to path. It does not
// verify it: a test may write a tape that does not read whole on purpose
// (a frame naming a blob it left out).
func WritePayloads(tb testing.TB, path string, payloads ...tapefmt.Payload) {
	tb.Helper()
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		for _, p := range payloads {
			if _, err := w.Append(0, p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// Open opens the tape at path, closed when the test ends.
func Open(tb testing.TB, path string) *tapefmt.Tape {
	tb.Helper()
	t, err := tapefmt.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.Close() })
	return t
}

// Payloads are the decoded payloads of the frames of the tape at path of
// the given kinds (all when none is given), in order.
func Payloads(tb testing.TB, path string, kinds ...tapefmt.Kind) []tapefmt.Payload {
	tb.Helper()
	var out []tapefmt.Payload
	for f, err := range Open(tb, path).Frames(kinds...) {
		if err != nil {
			tb.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
