package tapefmt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// frameRecords lists each frame as kind, stream, time and payload.
func frameRecords(t *testing.T, tp *Tape) []Frame {
	t.Helper()
	var out []Frame
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Frame{Kind: f.Kind, Schema: f.Schema, Stream: f.Stream, Time: f.Time, Payload: f.Payload})
	}
	return out
}

func sameFrames(t *testing.T, what string, a, b []Frame) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d frames, want %d", what, len(b), len(a))
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || a[i].Schema != b[i].Schema || a[i].Stream != b[i].Stream ||
			a[i].Time != b[i].Time || !bytes.Equal(a[i].Payload, b[i].Payload) {
			t.Errorf("%s: frame %d is %s %s, want %s %s", what, i, b[i].Kind, b[i].Payload, a[i].Kind, a[i].Payload)
		}
	}
}

// TestCopyFrame copies every frame of a tape onto a new one: the frames
// are the same records, so the chain (step frames included) and head come
// out the same, and every blob a frame names is on the copy.
func TestCopyFrame(t *testing.T) {
	t.Parallel()
	src := openBytes(t, writeSample(t, 3))
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for f, err := range src.Frames() {
		if err == nil {
			err = CopyFrame(w, src, f)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verifyTape(t, m.Bytes())
	dst := openBytes(t, m.Bytes())
	sameFrames(t, "copy", frameRecords(t, src), frameRecords(t, dst))
	srcRep, _ := src.Verify(VerifyOptions{})
	if dst.Head() != src.Head() || dst.Steps() != src.Steps() || rep.Blobs != srcRep.Blobs {
		t.Errorf("copy: head %s, %d steps, %d blobs; source %s, %d, %d",
			dst.Head().Short(), dst.Steps(), rep.Blobs, src.Head().Short(), src.Steps(), srcRep.Blobs)
	}
}

// missingBlobTape is a tape whose frame 1 names a blob it does not hold.
func missingBlobTape(t *testing.T) *Tape {
	t.Helper()
	var m memFile
	w, err := NewWriter(&m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, RunStart{Argv: []string{"a"}})
	w.Append(0, LLMRequest{Call: 0, Method: "POST", Path: "/v1", Body: HashOf([]byte("never stored"))})
	w.Commit()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return openBytes(t, m.Bytes())
}

func TestCopyFrameErrors(t *testing.T) {
	t.Parallel()
	src := missingBlobTape(t)
	w, err := NewWriter(&memFile{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := src.Frame(1)
	if err := CopyFrame(w, src, f); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("copying a frame whose blob is missing: %v", err)
	}
	bad := Frame{Kind: KindLLMRequest, Schema: 1, Payload: []byte(`{"call":`)}
	var fe *FormatError
	if err := CopyFrame(w, src, bad); !errors.As(err, &fe) {
		t.Errorf("copying a frame that does not decode: %v", err)
	}
	if w.Len() != 0 {
		t.Errorf("failed copies wrote %d frames", w.Len())
	}
}

// TestRewriteTorn rewrites a torn tape into a closed one holding the frames
// up to its last whole step.
func TestRewriteTorn(t *testing.T) {
	t.Parallel()
	full := writeSample(t, 4)
	last, _ := openBytes(t, full).Frame(openBytes(t, full).Len() - 3)
	dir := t.TempDir()
	tornPath, path := filepath.Join(dir, "torn.jbx"), filepath.Join(dir, "whole.jbx")
	if err := os.WriteFile(tornPath, full[:last.Offset+10], 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := Open(tornPath)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Recovered() == nil {
		t.Fatal("the torn tape opened without recovery")
	}
	n, err := Rewrite(src, path)
	if err != nil || n != src.Len() {
		t.Fatalf("Rewrite = %d, %v; want %d frames", n, err, src.Len())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	verifyTape(t, b)
	dst := openBytes(t, b)
	sameFrames(t, "rewrite", frameRecords(t, src), frameRecords(t, dst))
	if dst.Head() != src.Head() || !dst.Created().Equal(src.Created()) {
		t.Errorf("rewrite: head %s created %v; source %s, %v", dst.Head().Short(), dst.Created(), src.Head().Short(), src.Created())
	}
	// The same run: its id (and so its export's trace id) is kept (issue
	// 35: a recovered tape's export was another trace).
	if dst.ID() != src.ID() {
		t.Errorf("rewrite: id %x, source %x", dst.ID(), src.ID())
	}
}

func TestRewriteFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := openBytes(t, writeSample(t, 1))
	// An existing file is never overwritten, nor removed.
	existing := filepath.Join(dir, "existing.jbx")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := Rewrite(src, existing); err == nil || n != 0 {
		t.Errorf("Rewrite over an existing file = %d, %v", n, err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing file now holds %q", b)
	}
	// A copy that fails leaves nothing behind.
	path := filepath.Join(dir, "missing-blob.jbx")
	if _, err := Rewrite(missingBlobTape(t), path); err == nil || !strings.Contains(err.Error(), "which is not on the tape") {
		t.Errorf("Rewrite of a tape missing a blob: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Rewrite left %s: %v", path, err)
	}
}

func TestCreateWith(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "ok.jbx")
	err := CreateWith(path, Options{}, func(w *Writer) error {
		_, err := w.Append(0, Marker{Label: "ok"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ReadBack(path, nil); err != nil {
		t.Fatalf("the tape CreateWith made does not read back: %v", err)
	}

	failures := map[string]func(string) func(*Writer) error{
		"write fails": func(string) func(*Writer) error {
			return func(w *Writer) error {
				w.Append(0, Marker{Label: "half"})
				return errTest
			}
		},
		"close fails": func(string) func(*Writer) error {
			return func(w *Writer) error {
				w.Append(0, Marker{Label: "half"})
				w.fail(errTest) // as a failed write would: Close reports it
				return nil
			}
		},
		"read-back fails": func(path string) func(*Writer) error {
			return func(w *Writer) error {
				w.Append(0, Marker{Label: "tampered later"})
				if err := w.Close(); err != nil {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				b[fileHeaderSize+frameHeaderSize+2] ^= 1 // a payload byte: the CRC no longer matches
				return os.WriteFile(path, b, 0o644)
			}
		},
	}
	for name, write := range failures {
		path := filepath.Join(dir, name+".jbx")
		err := CreateWith(path, Options{}, write(path))
		var fe *FormatError
		if err == nil || (!errors.Is(err, errTest) && !errors.As(err, &fe)) {
			t.Errorf("%s: CreateWith = %v", name, err)
		}
		if _, serr := os.Stat(path); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: CreateWith failed (%v) and left the file: %v", name, err, serr)
		}
	}
	if err := CreateWith(filepath.Join(dir, "no", "such", "dir.jbx"), Options{}, func(*Writer) error { return nil }); err == nil {
		t.Error("CreateWith in a missing folder succeeded")
	}
}

var errTest = errors.New("test failure")

// TestRewriteRefusesATamperedTornTape: a frame changed and its CRC fixed
// up, the footer cut off: verify said "no footer" alone, and recover
// chained the changed frame anew into a tape that verified and sealed.
func TestRewriteRefusesATamperedTornTape(t *testing.T) {
	t.Parallel()
	b := writeSample(t, 3)
	i := bytes.Index(b, []byte("step 0\\n"))
	if i < 0 {
		t.Fatal("no output frame in the sample")
	}
	copy(b[i:], "step X")
	// The record's header starts before its JSON payload: find it by its
	// type and length, then fix its CRC up.
	start := bytes.LastIndexByte(b[:i], recFrame)
	for ; start > 0; start = bytes.LastIndexByte(b[:start], recFrame) {
		n := int(le.Uint32(b[start+4:]))
		if start+frameHeaderSize+n > i && b[start+frameHeaderSize] == '{' {
			le.PutUint32(b[start+20:], crcOf(b[start:start+20], b[start+frameHeaderSize:start+frameHeaderSize+n]))
			break
		}
	}
	tp := openBytes(t, b[:len(b)-200]) // no footer: torn
	if tp.Recovered() == nil {
		t.Fatal("the cut tape is not torn")
	}
	if _, err := tp.Verify(VerifyOptions{Blobs: true}); err == nil || !strings.Contains(err.Error(), "hash chain broken") {
		t.Fatalf("Verify of the tampered torn tape: %v", err)
	}
	path := filepath.Join(t.TempDir(), "laundered.jbx")
	if _, err := Rewrite(tp, path); err == nil || !strings.Contains(err.Error(), "hash chain broken") {
		t.Fatalf("Rewrite of the tampered torn tape: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Rewrite left %s", path)
	}
}
