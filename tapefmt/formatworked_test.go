package tapefmt

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// exampleOptions are the writer options of FORMAT.md's worked example.
func exampleOptions() Options {
	var t time.Duration
	return Options{
		Sync:    SyncNever,
		Now:     func() time.Duration { t += time.Millisecond; return t },
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		ID:      [16]byte([]byte("jukebox-example!")),
	}
}

// dumps reads the xxd dumps in text: each code block of "offset: bytes"
// lines becomes a map from offset to the bytes of that line. Lines with an
// elision (…) are left out.
func dumps(t *testing.T, text string) []map[int64][]byte {
	t.Helper()
	var out []map[int64][]byte
	for i, block := range strings.Split(text, "```") {
		if i%2 == 0 {
			continue // outside a code block
		}
		lines := map[int64][]byte{}
		for _, l := range strings.Split(block, "\n") {
			off, rest, ok := strings.Cut(l, ": ")
			if !ok || len(off) != 8 || strings.Contains(l, "…") {
				continue
			}
			n, err := strconv.ParseInt(off, 16, 64)
			if err != nil {
				continue
			}
			hexPart, _, _ := strings.Cut(rest, "  ")
			b, err := hex.DecodeString(strings.ReplaceAll(hexPart, " ", ""))
			if err != nil {
				t.Fatalf("FORMAT.md: dump line %q: %v", l, err)
			}
			lines[n] = b
		}
		if len(lines) > 0 {
			out = append(out, lines)
		}
	}
	return out
}

// matchDump reports every dump line that differs from the tape's bytes.
func matchDump(t *testing.T, what string, tape []byte, dump map[int64][]byte) {
	t.Helper()
	for off, want := range dump {
		if off+int64(len(want)) > int64(len(tape)) {
			t.Errorf("%s: the dump has bytes at %#x, past the tape's end (%d bytes)", what, off, len(tape))
			continue
		}
		if got := tape[off : off+int64(len(want))]; !bytes.Equal(got, want) {
			t.Errorf("%s at %#x:\n doc  % x\n code % x", what, off, want, got)
		}
	}
}

// TestFormatDocWorkedExample writes the tapes of FORMAT.md section 12 with
// the code given there and compares them with the dumps, byte for byte,
// then seals the first as 12 says and compares the sealed footer.
func TestFormatDocWorkedExample(t *testing.T) {
	t.Parallel()
	text := section(t, formatDoc(t), "## 12.")
	worked, blobs, _ := strings.Cut(text, "### 12.1")
	var buf bytes.Buffer
	w, err := NewWriter(&buf, exampleOptions())
	if err != nil {
		t.Fatal(err)
	}
	w.Append(0, RunStart{Argv: []string{"echo", "hi"}, Cwd: "/w", Seed: 7, Version: "0.1.0", Started: "2026-01-02T03:04:05Z"})
	w.Append(0, Output{Fd: 1, Data: Bytes("hi\n")})
	w.Commit()
	w.Append(0, RunEnd{ExitCode: 0})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tape := buf.Bytes()
	d := dumps(t, worked)
	if len(d) != 2 {
		t.Fatalf("section 12 has %d dumps, want the tape and its sealed footer", len(d))
	}
	if !strings.Contains(strings.Join(strings.Fields(worked), " "), "It is "+strconv.Itoa(len(tape))+" bytes") {
		t.Errorf("section 12 does not say the tape is %d bytes", len(tape))
	}
	matchDump(t, "section 12 tape", tape, d[0])
	if len(d[0]) != (len(tape)+15)/16 {
		t.Errorf("section 12 dumps %d lines, the tape is %d", len(d[0]), (len(tape)+15)/16)
	}

	path := filepath.Join(t.TempDir(), "example.jbx")
	if err := os.WriteFile(path, tape, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Seal(path, []byte("0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	sealed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	matchDump(t, "section 12 sealed footer", sealed, d[1])

	testWorkedBlobs(t, blobs)
}

func testWorkedBlobs(t *testing.T, text string) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, exampleOptions())
	if err != nil {
		t.Fatal(err)
	}
	a := []byte(`{"messages":[{"role":"system","content":"You are a careful coding agent."}],"n":1}`)
	b := []byte(`{"messages":[{"role":"system","content":"You are a careful coding agent."},{"role":"user","content":"hi"}],"n":1}`)
	w.PutBlob("req", a)
	w.PutBlob("req", b)
	w.Append(0, Marker{Label: "blobs"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tape := buf.Bytes()
	d := dumps(t, text)
	if len(d) == 0 {
		t.Fatal("section 12.1 has no dump")
	}
	matchDump(t, "section 12.1 tape", tape, d[0])
	tp := openBytes(t, tape)
	flat := strings.Join(strings.Fields(text), " ")
	for _, want := range []string{
		"= " + strconv.Itoa(len(tape)) + " bytes.",
		"`" + tp.Head().String() + "`",
		"footer CRC 0x" + hex.EncodeToString(reverse(tape[len(tape)-4:])),
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("section 12.1 does not say %q", want)
		}
	}
}

// reverse returns a little-endian field as it is written in hex, most
// significant byte first.
func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}
