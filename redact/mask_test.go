package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestMasker: a match becomes Redacted, escapes whole, so masked bodies
// stay valid JSON; nothing else changes.
func TestMasker(t *testing.T) {
	t.Parallel()
	m, err := NewMasker([]string{`sk-[A-Za-z0-9]+`, `card [\d-]+`, `caf[^"\s]+`})
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		`{"k": "sk-abc123"}`:                  `{"k": "[redacted]"}`,
		`data: {"t":"card 4111-1111"}` + "\n": `data: {"t":"[redacted]"}` + "\n",
		`{"t": "caf\u00e9 ok"}`:               `{"t": "[redacted] ok"}`,
		`{"t": "café\n"}`:                     `{"t": "[redacted]"}`,
		`{"t": "x\"sk-abc\"y"}`:               `{"t": "x\"[redacted]\"y"}`,
		`nothing here`:                        `nothing here`,
	} {
		got := m.Mask([]byte(in))
		if string(got) != want {
			t.Errorf("Mask(%s) = %s, want %s", in, got, want)
		}
		if json.Valid([]byte(in)) && !json.Valid(got) {
			t.Errorf("Mask(%s) = %s: no longer JSON", in, got)
		}
	}
	in := []byte("sk-keep")
	m.Mask(in)
	if string(in) != "sk-keep" {
		t.Error("Mask changed its input")
	}
	if n, err := NewMasker(nil); n != nil || err != nil {
		t.Errorf("NewMasker(nil) = %v, %v", n, err)
	}
	var nilMask *Masker
	if got := nilMask.Mask(in); !bytes.Equal(got, in) {
		t.Error("a nil Masker masked")
	}
	for _, bad := range []string{`(`, `x*`} {
		if _, err := NewMasker([]string{bad}); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("NewMasker(%q): %v", bad, err)
		}
	}
}

// TestWriterMasks: a writer with a Masker masks blobs and output, keeps
// frames copied from another tape as they are, and writes its patterns
// into run.start with the matches in argv and env replaced.
func TestWriterMasks(t *testing.T) {
	t.Parallel()
	w, buf := maskedWriter(t, `PLANT\d+`)
	if _, err := w.Append(0, tapefmt.RunStart{Argv: []string{"agent", "--x=PLANT1"}, Env: map[string]string{"AGENT_X": "PLANT2"}}); err != nil {
		t.Fatal(err)
	}
	h, err := w.PutBlob("b", []byte(`{"q": "PLANT3"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(0, tapefmt.Output{Fd: 1, Data: tapefmt.Bytes("said PLANT4\n")}); err != nil {
		t.Fatal(err)
	}
	if h != tapefmt.HashOf([]byte(`{"q": "[redacted]"}`)) {
		t.Error("the blob's hash is not of the masked bytes")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := tp.Frame(0)
	p, _ := f.Decode()
	rs := p.(*tapefmt.RunStart)
	if !slices.Equal(rs.Argv, []string{"agent", "--x=" + Redacted}) || rs.Env["AGENT_X"] != Redacted || !slices.Equal(rs.Redact, []string{`PLANT\d+`}) {
		t.Errorf("run.start: %+v", rs)
	}
	f, _ = tp.Frame(1)
	p, _ = f.Decode()
	if got := string(p.(*tapefmt.Output).Data); got != "said [redacted]\n" {
		t.Errorf("output %q", got)
	}
	if b, _ := tp.Blob(h); string(b) != `{"q": "[redacted]"}` {
		t.Errorf("blob %q", b)
	}
}

// TestMaskFixedLength: a mask does not tell the secret's length, so two
// keys of different lengths mask alike (a rotated key still matches).
func TestMaskFixedLength(t *testing.T) {
	t.Parallel()
	m, err := NewMasker([]string{`sk-live-[A-Za-z0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	a := m.Mask([]byte(`{"k": "sk-live-abc"}`))
	b := m.Mask([]byte(`{"k": "sk-live-abcdefghijklmnop0123456789"}`))
	if string(a) != string(b) {
		t.Errorf("masks differ by the secret's length: %s and %s", a, b)
	}
	if !json.Valid(a) {
		t.Errorf("masked %s is not JSON", a)
	}
}

// TestSizeOfMaskedBody: a frame naming a masked body gives the size kept,
// not the size sent, which would tell the secret's length.
func TestSizeOfMaskedBody(t *testing.T) {
	t.Parallel()
	w, buf := maskedWriter(t, `PLANT\w+`)
	body := []byte(`{"q": "PLANTabcdefghijklmnopqrstuvwxyz"}`)
	h, _ := w.PutBlob("b", body)
	w.Append(0, tapefmt.LLMRequest{Body: h, Size: int64(len(body))})
	resp, chunks, _ := w.PutStream("r", body, tapefmt.Chunks{{End: int64(len(body))}})
	w.Append(0, tapefmt.LLMResponse{Body: resp, Size: int64(len(body)), Chunks: chunks})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tp, err := tapefmt.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	want := int64(len(`{"q": "[redacted]"}`))
	for i := range 2 {
		f, _ := tp.Frame(i)
		p, _ := f.Decode()
		var size int64
		switch v := p.(type) {
		case *tapefmt.LLMRequest:
			size = v.Size
		case *tapefmt.LLMResponse:
			size = v.Size
		}
		if size != want {
			t.Errorf("frame %d: size %d, want %d (the masked body's)", i, size, want)
		}
	}
}

// maskedWriter is a writer whose filter masks pattern, on a buffer.
func maskedWriter(t *testing.T, pattern string) (*tapefmt.Writer, *bytes.Buffer) {
	t.Helper()
	m, err := NewMasker([]string{pattern})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := tapefmt.NewWriter(&buf, tapefmt.Options{Filter: NewFilter(m)})
	if err != nil {
		t.Fatal(err)
	}
	return w, &buf
}
