package tapefmt

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// syncCounter is a tape destination that counts the syncs asked of it.
type syncCounter struct {
	bytes.Buffer
	syncs atomic.Int32
}

func (s *syncCounter) Sync() error { s.syncs.Add(1); return nil }

func TestSetSync(t *testing.T) {
	t.Parallel()
	var dst syncCounter
	w, err := NewWriter(&dst, Options{Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	step := func(policy string, want int32) {
		t.Helper()
		w.Append(0, Marker{Label: policy})
		w.Commit()
		if got := dst.syncs.Load(); got != want {
			t.Errorf("after a step under %s: %d syncs, want %d", policy, got, want)
		}
	}
	step("SyncNever", 0)
	w.SetSync(SyncFrame)
	step("SyncFrame", 2) // one per frame
	w.SetSync(SyncNever)
	step("SyncNever again", 2)
	w.SetSync(SyncStep) // in the background, once per step
	w.Append(0, Marker{Label: "SyncStep"})
	if got := dst.syncs.Load(); got != 2 {
		t.Errorf("SyncStep synced a frame that is not a step boundary (%d syncs)", got)
	}
	w.Commit()
	if err := w.Close(); err != nil { // waits for the background sync, then syncs
		t.Fatal(err)
	}
	if got := dst.syncs.Load(); got != 4 {
		t.Errorf("after SyncStep and Close: %d syncs, want 4", got)
	}
}

// syncSignal is a tape destination that says on a channel each time it is
// synced.
type syncSignal struct {
	syncCounter
	synced chan struct{}
}

func (s *syncSignal) Sync() error {
	s.syncCounter.Sync()
	s.synced <- struct{}{}
	return nil
}

// TestSyncStepFoldsQuickSteps: under SyncStep the background syncer
// fsyncs at most once per gap, the steps taken meanwhile folded into the
// next fsync, and Close does not wait out the gap: it syncs at once.
func TestSyncStepFoldsQuickSteps(t *testing.T) {
	t.Parallel()
	dst := &syncSignal{synced: make(chan struct{}, 100)}
	w, err := NewWriter(dst, Options{Sync: SyncStep, syncGap: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		w.Append(0, Marker{Label: fmt.Sprint("step ", i)})
		if _, err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-dst.synced // the first step's fsync comes at once
		}
	}
	if got := dst.syncs.Load(); got != 1 {
		t.Errorf("50 steps within the gap: %d fsyncs, want 1 (the rest wait for the gap)", got)
	}
	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close waited for the background syncer's gap (an hour)")
	}
	if got := dst.syncs.Load(); got != 2 {
		t.Errorf("after Close: %d fsyncs, want 2 (the first step's, Close's)", got)
	}
}

// TestWriterAccessors checks what a Writer says about the tape it writes
// against what a reader finds.
func TestWriterAccessors(t *testing.T) {
	t.Parallel()
	var m memFile
	created := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	id := [16]byte([]byte("accessor-test-id"))
	w, err := NewWriter(&m, Options{Created: created, ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if w.ID() != id || w.Len() != 0 || w.Head() != HashOf(make([]byte, 32)) {
		t.Fatalf("new writer: id %x, len %d, head %s", w.ID(), w.Len(), w.Head().Short())
	}
	heads := map[Hash]bool{w.Head(): true}
	for i, p := range []Payload{RunStart{Argv: []string{"a"}}, Marker{Label: "m"}, RunEnd{}} {
		seq, err := w.Append(0, p)
		if err != nil || seq != uint64(i) || w.Len() != uint64(i+1) || heads[w.Head()] {
			t.Fatalf("append %d: seq %d, %v, len %d, head %s seen before: %v", i, seq, err, w.Len(), w.Head().Short(), heads[w.Head()])
		}
		heads[w.Head()] = true
	}
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp := openBytes(t, m.Bytes())
	if tp.Head() != head || tp.ID() != id || !tp.Created().Equal(created) || tp.Size() != int64(m.Len()) || tp.Len() != 3 {
		t.Errorf("tape: head %s (writer %s), id %x, created %v, size %d of %d, len %d",
			tp.Head().Short(), head.Short(), tp.ID(), tp.Created(), tp.Size(), m.Len(), tp.Len())
	}
	if a, b := randomWriterID(t), randomWriterID(t); a == b || a == [16]byte{} {
		t.Errorf("two writers without Options.ID got ids %x and %x", a, b)
	}
}

// randomWriterID is the id a writer without Options.ID picks.
func randomWriterID(t *testing.T) [16]byte {
	t.Helper()
	w, err := NewWriter(&memFile{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

func TestAppendAtAndFrame(t *testing.T) {
	t.Parallel()
	var m memFile
	w, err := NewWriter(&m, Options{Now: func() time.Duration { return 42 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	w.AppendAt(5*time.Second, 3, Marker{Label: "at five"})
	w.AppendAt(-1, 0, Marker{Label: "now"})
	w.AppendFrame(Frame{Kind: KindMarker, Schema: 1, Stream: 9, Time: time.Minute, Payload: []byte(`{"label":"copied"}`)})
	w.AppendFrame(Frame{Kind: KindStep, Time: 2 * time.Minute, Payload: []byte(`{"step":7,"chain":"bogus"}`)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	verifyTape(t, m.Bytes()) // the step frame was written anew, with this tape's chain
	tp := openBytes(t, m.Bytes())
	want := []struct {
		stream uint32
		time   time.Duration
	}{{3, 5 * time.Second}, {0, 42 * time.Millisecond}, {9, time.Minute}, {0, 2 * time.Minute}}
	for i, w := range want {
		f, err := tp.Frame(i)
		k, at, kerr := tp.KindAt(i)
		if err != nil || kerr != nil || f.Stream != w.stream || f.Time != w.time || k != f.Kind || at != f.Time {
			t.Errorf("frame %d: stream %d time %v (KindAt %s %v), %v %v; want stream %d time %v",
				i, f.Stream, f.Time, k, at, err, kerr, w.stream, w.time)
		}
		if i+1 < len(want) {
			next, _ := tp.Frame(i + 1)
			if f.Offset+f.Size() != next.Offset {
				t.Errorf("frame %d: Size %d, but the next frame starts %d bytes on", i, f.Size(), next.Offset-f.Offset)
			}
		}
	}
	if f, _ := tp.Frame(3); !strings.Contains(string(f.Payload), `"step":0,`) {
		t.Errorf("copied step frame: %s", f.Payload)
	}
}

func TestWriterRefuses(t *testing.T) {
	t.Parallel()
	w, err := NewWriter(&memFile{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Payload{Step{}, Unknown{K: KindStep, JSON: []byte(`{}`)}} {
		if _, err := w.Append(0, p); err == nil || !strings.Contains(err.Error(), "Commit") {
			t.Errorf("Append(%T of kind %s) = %v; step frames are Commit's", p, p.Kind(), err)
		}
	}
	if _, err := w.Append(0, Marker{Note: strings.Repeat("x", MaxPayload)}); err == nil || !strings.Contains(err.Error(), "blob") {
		t.Errorf("a payload over MaxPayload: %v", err)
	}
	// Refusals are not failures: the writer goes on.
	if _, err := w.Append(0, Marker{Label: "still writing"}); err != nil || w.Len() != 1 {
		t.Fatalf("after refusals: %v, %d frames", err, w.Len())
	}
	h1, err1 := w.PutBlob("lane", []byte("same"))
	h2, err2 := w.PutBlob("other lane", []byte("same"))
	if err1 != nil || err2 != nil || h1 != h2 || h1 != HashOf([]byte("same")) {
		t.Errorf("PutBlob twice: %s %v, %s %v", h1.Short(), err1, h2.Short(), err2)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	_, errAppend := w.Append(0, Marker{})
	_, errCommit := w.Commit()
	_, errBlob := w.PutBlob("lane", []byte("late"))
	errFlush := w.Flush()
	for name, err := range map[string]error{"Append": errAppend, "Commit": errCommit, "PutBlob": errBlob, "Flush": errFlush} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestFlush checks that Flush hands the frames to the destination: without
// a Close, a reader recovers them up to the last step.
func TestFlush(t *testing.T) {
	t.Parallel()
	var m memFile
	w, err := NewWriter(&m, Options{Sync: SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, RunStart{Argv: []string{"a"}}) // a step boundary: handed over at once
	atStart := m.Len()
	w.Append(0, Marker{Label: "one"})
	if m.Len() != atStart {
		t.Fatalf("a frame that is not a boundary reached the destination before Flush")
	}
	if err := w.Flush(); err != nil || m.Len() == atStart {
		t.Fatalf("Flush: %v, %d bytes", err, m.Len())
	}
	tp := openBytes(t, m.Bytes())
	if rec := tp.Recovered(); rec == nil || tp.Len() != 1 || rec.FramesDropped != 1 {
		t.Errorf("flushed, unclosed tape: %d frames kept, recovery %+v", tp.Len(), rec)
	}
}

func TestTapeLookups(t *testing.T) {
	t.Parallel()
	tp := openBytes(t, writeSample(t, 2))
	for _, i := range []int{-1, tp.Len(), tp.Len() + 100} {
		_, err1 := tp.Frame(i)
		_, _, err2 := tp.KindAt(i)
		if !errors.Is(err1, ErrFrameRange) || !errors.Is(err2, ErrFrameRange) {
			t.Errorf("frame %d of %d: %v, %v", i, tp.Len(), err1, err2)
		}
	}
	f, _ := tp.Frame(1)
	p, _ := f.Decode()
	body := p.(*LLMRequest).Body
	missing := HashOf([]byte("not on this tape"))
	if !tp.HasBlob(body) || tp.HasBlob(missing) || tp.HasBlob(Hash{}) {
		t.Errorf("HasBlob: %v for a named blob, %v for another", tp.HasBlob(body), tp.HasBlob(missing))
	}
	if _, err := tp.Blob(missing); !errors.Is(err, ErrBlobNotFound) {
		t.Errorf("Blob(missing): %v", err)
	}
	if err := tp.Close(); err != nil { // a NewReader tape has nothing to close
		t.Errorf("Close: %v", err)
	}
}

func TestReadBackAndSealRefuse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := writeSample(t, 3)
	torn := filepath.Join(dir, "torn.jbx")
	whole := filepath.Join(dir, "whole.jbx")
	if err := os.WriteFile(torn, full[:len(full)-footerSize-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(whole, full, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReadBack(whole, nil); err != nil {
		t.Errorf("ReadBack of a whole tape: %v", err)
	}
	if err := ReadBack(torn, nil); !errors.Is(err, ErrNoFooter) || !strings.Contains(err.Error(), torn) {
		t.Errorf("ReadBack of a torn tape: %v", err)
	}
	if err := ReadBack(whole, []byte("0123456789abcdef")); !errors.Is(err, ErrNotSealed) {
		t.Errorf("ReadBack with a key of an unsealed tape: %v", err)
	}
	if err := ReadBack(filepath.Join(dir, "absent.jbx"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadBack of no file: %v", err)
	}
	if _, err := Seal(torn, []byte("0123456789abcdef")); !errors.Is(err, ErrNoFooter) {
		t.Errorf("Seal of a torn tape: %v", err)
	}
	for _, key := range [][]byte{make([]byte, MinKeySize-1), make([]byte, MaxKeySize+1)} {
		if _, err := Seal(whole, key); err == nil {
			t.Errorf("Seal with a %d-byte key succeeded", len(key))
		}
	}
	if b, _ := os.ReadFile(whole); !bytes.Equal(b, full) {
		t.Error("a refused Seal changed the tape")
	}
}
