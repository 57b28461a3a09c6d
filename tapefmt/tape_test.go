package tapefmt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// memFile is an in-memory tape destination.
type memFile struct{ bytes.Buffer }

func (m *memFile) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(m.Bytes()).ReadAt(p, off)
}

// writeSample writes a small multi-step run and returns its bytes.
func writeSample(t testing.TB, steps int) []byte {
	t.Helper()
	var m memFile
	var clock time.Duration
	w, err := NewWriter(&m, Options{Now: func() time.Duration { clock += time.Millisecond; return clock }})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Append(0, RunStart{Argv: []string{"python", "agent.py"}, Cwd: "/w", Seed: 7,
		Env: map[string]string{"LANG": "C", "OPENAI_API_KEY": "sk-secret"}}))
	history := `{"model":"m","messages":[{"role":"system","content":"be brief"}`
	for i := range steps {
		history += fmt.Sprintf(`,{"role":"user","content":"step %d %s"}`, i, noise(i))
		body, err := w.PutBlob("req", []byte(history+"]}"))
		if err != nil {
			t.Fatal(err)
		}
		must(w.Append(0, LLMRequest{Call: uint64(i), Provider: "openai", Method: "POST", Path: "/v1/chat/completions",
			Query: "api_key=sk-secret&x=1", Header: http.Header{"Authorization": {"Bearer sk-secret"}, "Content-Type": {"application/json"}},
			Body: body, Size: int64(len(history) + 2), Model: "m", Stream: true}))
		resp, _ := w.PutBlob("resp", []byte(fmt.Sprintf("data: {\"n\":%d}\n\ndata: [DONE]\n\n", i)))
		must(w.Append(0, LLMResponse{Call: uint64(i), Status: 200, Body: resp, Chunks: []Chunk{{End: 10, At: 5}}, Usage: Usage{Input: 100, Output: 20}}))
		must(w.Append(1, Output{Fd: 1, Data: Bytes(fmt.Sprintf("step %d\n", i))}))
		must(w.Commit())
	}
	must(w.Append(0, RunEnd{ExitCode: 0}))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	verifyTape(t, m.Bytes())
	return m.Bytes()
}

// verifyTape is internal/tapetest.Verify for the tests inside the package,
// which cannot import it: the tape in b must open by its footer, verify
// with every blob decoded and re-hashed, and decode every frame's payload
// and every blob it names. Every test that writes a tape calls it on the
// tape before checking or damaging it.
func verifyTape(t testing.TB, b []byte) *VerifyReport {
	t.Helper()
	tp, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("tape does not open: %v", err)
	}
	if rec := tp.Recovered(); rec != nil {
		t.Fatalf("tape has no footer: %d bytes dropped after offset %d", rec.BytesDropped(), rec.ValidEnd)
	}
	// With Blobs, Verify decodes every payload, checks that each blob it
	// names is on the tape, and decodes and re-hashes every blob.
	rep, err := tp.Verify(VerifyOptions{Blobs: true})
	if err != nil {
		t.Fatalf("tape does not verify: %v", err)
	}
	return rep
}

// noise is 256 bytes that do not compress, different for each i.
func noise(i int) string {
	h := HashOf([]byte{byte(i), byte(i >> 8)})
	return strings.Repeat(h.String(), 4)
}

func openBytes(t testing.TB, b []byte) *Tape {
	t.Helper()
	tp, err := NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestRoundTrip(t *testing.T) {
	b := writeSample(t, 5)
	tp := openBytes(t, b)
	if tp.Recovered() != nil {
		t.Fatalf("closed tape was recovered: %+v", tp.Recovered())
	}
	if got, want := tp.Len(), 1+5*4+1; got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	if tp.Steps() != 5 {
		t.Fatalf("Steps = %d", tp.Steps())
	}
	rep, err := tp.Verify(VerifyOptions{Blobs: true})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.Frames != tp.Len() || rep.Blobs != 10 {
		t.Fatalf("report %+v", rep)
	}
	f, err := tp.Frame(1)
	if err != nil || f.Kind != KindLLMRequest || f.Seq != 1 {
		t.Fatalf("Frame(1) = %+v, %v", f, err)
	}
	p, err := f.Decode()
	if err != nil {
		t.Fatal(err)
	}
	req := p.(*LLMRequest)
	body, err := tp.Blob(req.Body)
	if err != nil || !bytes.HasPrefix(body, []byte(`{"model":"m"`)) || int64(len(body)) != req.Size {
		t.Fatalf("blob = %q, %v", body, err)
	}
	n := 0
	for f, err := range tp.Frames(KindOutput) {
		if err != nil || f.Kind != KindOutput {
			t.Fatalf("Frames(output) gave %v, %v", f.Kind, err)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("%d output frames, want 5", n)
	}
}

func TestDeltaCompressesResentHistory(t *testing.T) {
	b := writeSample(t, 40)
	var raw int
	history := 60
	for i := range 40 {
		history += len(fmt.Sprintf(`,{"role":"user","content":"step %d %s"}`, i, noise(i)))
		raw += history
	}
	if len(b) > raw/4 {
		t.Fatalf("tape is %d bytes for %d bytes of request bodies; deltas are not working", len(b), raw)
	}
}

func TestTornTapeRecovers(t *testing.T) {
	full := writeSample(t, 4)
	tp := openBytes(t, full)
	end := tp.ft.recordsEnd
	// Cut inside the frames of the last step: the run.end frame and the
	// last commit are lost, so the last whole step is step 2.
	last, _ := tp.Frame(tp.Len() - 3) // output frame of step 3
	torn := append([]byte(nil), full[:last.Offset+10]...)
	tt := openBytes(t, torn)
	rec := tt.Recovered()
	if rec == nil {
		t.Fatal("torn tape opened without recovery")
	}
	if tt.Steps() != 3 || rec.FramesDropped != 2 || rec.BytesDropped() <= 0 {
		t.Fatalf("recovery %+v, steps %d", rec, tt.Steps())
	}
	if _, err := tt.Verify(VerifyOptions{Blobs: true}); err != nil {
		t.Fatalf("Verify recovered: %v", err)
	}
	// A tape cut exactly at the end of its records is whole but unindexed.
	tt = openBytes(t, full[:end])
	if tt.Len() != tp.Len() || tt.Head() != tp.Head() {
		t.Fatalf("unindexed tape: %d frames, want %d", tt.Len(), tp.Len())
	}
}

func TestTamperDetected(t *testing.T) {
	full := writeSample(t, 3)
	tp := openBytes(t, full)
	f, _ := tp.Frame(5)
	bad := append([]byte(nil), full...)
	bad[f.Offset+frameHeaderSize+3] ^= 1
	_, err := openBytes(t, bad).Verify(VerifyOptions{})
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Frame != 5 || fe.Offset != f.Offset {
		t.Fatalf("flipped byte: got %v", err)
	}
	// Recompute the CRC: only the chain catches it now, at the next step.
	le.PutUint32(bad[f.Offset+20:], crcOf(bad[f.Offset:f.Offset+20], bad[f.Offset+frameHeaderSize:f.Offset+frameHeaderSize+int64(len(f.Payload))]))
	_, err = openBytes(t, bad).Verify(VerifyOptions{})
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "chain") {
		t.Fatalf("edited frame with fixed CRC: got %v", err)
	}
}

func TestSeal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jbx")
	if err := os.WriteFile(path, writeSample(t, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	key := []byte("0123456789abcdef0123")
	tp, _ := Open(path)
	if err := tp.CheckSeal(key); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("unsealed: %v", err)
	}
	tp.Close()
	if _, err := Seal(path, key); err != nil {
		t.Fatal(err)
	}
	tp, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if _, err := tp.Verify(VerifyOptions{Blobs: true, Key: key}); err != nil {
		t.Fatalf("sealed verify: %v", err)
	}
	sealed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	verifyTape(t, sealed)
	if err := tp.CheckSeal([]byte("another key of 16+ bytes")); !errors.Is(err, ErrSeal) {
		t.Fatalf("wrong key: %v", err)
	}
}

func TestHostileHeaders(t *testing.T) {
	full := writeSample(t, 2)
	cases := map[string][]byte{
		"empty":     nil,
		"short":     full[:10],
		"bad magic": append([]byte("NOTATAPE"), full[8:]...),
	}
	for name, b := range cases {
		_, err := NewReader(bytes.NewReader(b), int64(len(b)))
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: got %v, want FormatError", name, err)
		}
	}
}

func TestChunksRoundTrip(t *testing.T) {
	in := Chunks{{End: 182, At: 200_000_000}, {End: 365, At: 215_000_123}, {End: 365, At: 215_500_000}}
	b, err := json.Marshal(in)
	if err != nil || string(b) != "[182,200000,183,15000,0,500]" {
		t.Fatalf("marshal = %s, %v", b, err)
	}
	var out Chunks
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	want := Chunks{{End: 182, At: 200_000_000}, {End: 365, At: 215_000_000}, {End: 365, At: 215_500_000}}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Fatalf("round trip = %v, want %v (times kept to the microsecond)", out, want)
	}
}

func TestChunksParseForms(t *testing.T) {
	for in, want := range map[string]string{
		"[]": "[]", "[1,2]": "[{1 2000}]", "[ 1 , 2 ]": "[{1 2000}]", "[-1,3]": "[{-1 3000}]",
	} {
		var c Chunks
		if err := json.Unmarshal([]byte(in), &c); err != nil || fmt.Sprint(c) != want {
			t.Errorf("%s: got %v, %v; want %s", in, c, err, want)
		}
	}
	for _, bad := range []string{"[1,]", "[1]", `["a",1]`, "{}", "[1,2,3]"} {
		var c Chunks
		if err := json.Unmarshal([]byte(bad), &c); err == nil {
			t.Errorf("%s: accepted as %v", bad, c)
		}
	}
}

// TestPreload: a preloaded tape reads every frame and blob from memory, as
// the file held them when it was read (here the file is emptied after);
// one larger than the bound asked is left to read from the file.
func TestPreload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := writeSample(t, 5)
	for _, c := range []struct {
		name  string
		max   int64
		inMem bool
	}{{"whole", 1 << 20, true}, {"larger than max", int64(len(b)) - 1, false}} {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".jbx")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		tp, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tp.Preload(c.max)
		if err := os.WriteFile(path, make([]byte, len(b)), 0o644); err != nil { // zeros, same size
			t.Fatal(err)
		}
		_, err = tp.Verify(VerifyOptions{Blobs: true})
		if c.inMem && err != nil {
			t.Errorf("%s: the preloaded tape does not verify once the file changed: %v", c.name, err)
		}
		if !c.inMem && err == nil {
			t.Errorf("%s: the tape was read into memory (it verifies from a file of zeros)", c.name)
		}
		tp.Close()
	}
}
