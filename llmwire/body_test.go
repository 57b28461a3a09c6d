package llmwire

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// compress applies one content coding, as an upstream would.
func compress(t testing.TB, coding string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := encoder(t, coding, &buf)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encoder(t testing.TB, coding string, buf io.Writer) io.WriteCloser {
	t.Helper()
	// The fastest levels: the tests decode, and compressing their bombs
	// of zeros at the default levels took seconds under the race detector.
	switch coding {
	case "gzip":
		w, _ := gzip.NewWriterLevel(buf, gzip.BestSpeed)
		return w
	case "zlib":
		w, _ := zlib.NewWriterLevel(buf, zlib.BestSpeed)
		return w
	case "deflate":
		w, _ := flate.NewWriter(buf, flate.BestSpeed)
		return w
	case "br":
		return brotli.NewWriterLevel(buf, brotli.BestSpeed)
	case "zstd":
		w, err := zstd.NewWriter(buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	t.Fatalf("no encoder for %s", coding)
	return nil
}

func encoded(v ...string) http.Header { return http.Header{"Content-Encoding": v} }

const sampleBody = `{"id":"chatcmpl-1","model":"gpt-4o-mini","choices":[{"message":{"role":"assistant","content":"hello there"}}],"usage":{"prompt_tokens":11,"completion_tokens":7}}`

// TestDecodeBodyEachEncoding: every coding a provider may use decodes to the
// body it was made from, and names itself.
func TestDecodeBodyEachEncoding(t *testing.T) {
	plain := []byte(sampleBody)
	for _, c := range []struct {
		header   http.Header
		body     []byte
		encoding string
	}{
		{encoded("gzip"), compress(t, "gzip", plain), "gzip"},
		{encoded("x-gzip"), compress(t, "gzip", plain), "x-gzip"},
		{encoded("deflate"), compress(t, "zlib", plain), "deflate"},    // zlib-wrapped, as RFC 9110 says
		{encoded("deflate"), compress(t, "deflate", plain), "deflate"}, // raw, as some servers send it
		{encoded("br"), compress(t, "br", plain), "br"},
		{encoded("zstd"), compress(t, "zstd", plain), "zstd"},
		{encoded("GZip "), compress(t, "gzip", plain), "gzip"},
		{encoded("identity"), plain, ""},
		{encoded("identity, gzip"), compress(t, "gzip", plain), "gzip"},
		// Stacked: listed in the order applied, undone in reverse.
		{encoded("gzip, br"), compress(t, "br", compress(t, "gzip", plain)), "gzip, br"},
		{encoded("zstd", "deflate"), compress(t, "zlib", compress(t, "zstd", plain)), "zstd, deflate"},
		{nil, plain, ""},
	} {
		d := DecodeBody(c.header, c.body)
		if string(d.Text) != sampleBody || d.Encoding != c.encoding || d.Undecodable != "" || d.Truncated {
			t.Errorf("%v: got %q encoding %q undecodable %q truncated %v", c.header, d.Text, d.Encoding, d.Undecodable, d.Truncated)
		}
		if model, u := ExtractUsage(d.Text); model != "gpt-4o-mini" || u.Input != 11 || u.Output != 7 {
			t.Errorf("%v: usage %q %+v", c.header, model, u)
		}
	}
	// A body that was not compressed is handed back as it is, not copied.
	if d := DecodeBody(http.Header{}, plain); &d.Text[0] != &plain[0] || d.Note() != "" {
		t.Fatal("an uncompressed body was copied")
	}
	if d := DecodeBody(encoded("gzip"), nil); len(d.Text) != 0 || d.Undecodable != "" || d.Encoding != "gzip" {
		t.Fatalf("empty gzip body: %+v", d)
	}
}

// TestDecodeBodyUndecodable: a corrupt body, or one in a coding jukebox does
// not know, keeps its stored bytes and says why.
func TestDecodeBodyUndecodable(t *testing.T) {
	gz := compress(t, "gzip", []byte(sampleBody))
	corrupt := bytes.Clone(gz)
	for i := 10; i < len(corrupt)-8; i++ {
		corrupt[i] ^= 0x5a
	}
	for _, c := range []struct {
		header http.Header
		body   []byte
		reason string
	}{
		{encoded("gzip"), corrupt, "gzip: "},
		{encoded("gzip"), []byte(sampleBody), "gzip: "}, // labelled gzip, sent plain
		{encoded("br"), []byte("not brotli at all, really not"), "br: "},
		{encoded("zstd"), gz, "zstd: "},
		{encoded("compress"), gz, "compress: unknown content-encoding"},
		{encoded("gzip, compress"), gz, "compress: unknown content-encoding"},
	} {
		d := DecodeBody(c.header, c.body)
		if !strings.HasPrefix(d.Undecodable, c.reason) || &d.Text[0] != &c.body[0] || len(d.Text) != len(c.body) {
			t.Errorf("%v: undecodable %q (want %q...), %d bytes kept of %d", c.header, d.Undecodable, c.reason, len(d.Text), len(c.body))
		}
		if n := d.Note(); !strings.Contains(n, "undecodable: "+d.Undecodable) {
			t.Errorf("note %q", n)
		}
	}
}

// TestDecodeBodyTruncated: compressed data cut off mid-stream (an upstream
// reset) decodes as far as it goes.
func TestDecodeBodyTruncated(t *testing.T) {
	plain := []byte(strings.Repeat("data: {\"choices\":[{\"delta\":{\"content\":\"word \"}}]}\n\n", 2000))
	for _, coding := range []string{"gzip", "br", "zstd", "zlib", "deflate"} {
		name := coding
		if coding == "zlib" {
			name = "deflate"
		}
		z := compress(t, coding, plain)
		d := DecodeBody(encoded(name), z[:len(z)*2/3])
		if !d.Truncated || d.Undecodable != "" || !bytes.HasPrefix(plain, d.Text) || len(d.Text) >= len(plain) {
			t.Errorf("%s: truncated %v undecodable %q, %d of %d bytes, prefix %v", coding, d.Truncated, d.Undecodable,
				len(d.Text), len(plain), bytes.HasPrefix(plain, d.Text))
		}
		if d.Note() != name+", cut off: decoded what arrived" {
			t.Errorf("note %q", d.Note())
		}
	}
}

// zeros reads as many zero bytes as asked for.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestDecodeBodyBomb: a gzip of 100 MiB of zeros (about 100 KB on the
// wire) is stopped at the cap, without the memory for 100 MiB.
func TestDecodeBodyBomb(t *testing.T) {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := io.CopyN(w, zeros{}, 100<<20); err != nil {
		t.Fatal(err)
	}
	w.Close()
	bomb := buf.Bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := DecodeBody(encoded("gzip"), bomb)
	runtime.ReadMemStats(&after)
	if d.Undecodable != "gzip: decodes to more than 64 MiB" || !bytes.Equal(d.Text, bomb) {
		t.Fatalf("undecodable %q, %d bytes", d.Undecodable, len(d.Text))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxDecodedBody+8<<20 {
		t.Fatalf("decoding the bomb allocated %d MiB", alloc>>20)
	}
}

// TestDecodeBodyZstdBomb: zstd of 100 MiB of zeros stops at the cap too,
// and a frame whose window is over RFC 9659's 8 MB is refused.
func TestDecodeBodyZstdBomb(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	bomb := enc.EncodeAll(make([]byte, 100<<20), nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	d := DecodeBody(encoded("zstd"), bomb)
	runtime.ReadMemStats(&after)
	if !strings.HasPrefix(d.Undecodable, "zstd: ") || !bytes.Equal(d.Text, bomb) {
		t.Fatalf("undecodable %q, %d bytes", d.Undecodable, len(d.Text))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxDecodedBody+8<<20 {
		t.Fatalf("decoding the bomb allocated %d MiB", alloc>>20)
	}
	var buf bytes.Buffer
	wide, _ := zstd.NewWriter(&buf, zstd.WithWindowSize(32<<20))
	io.CopyN(wide, zeros{}, 40<<20)
	wide.Close()
	if d := DecodeBody(encoded("zstd"), buf.Bytes()); !strings.Contains(d.Undecodable, "window") {
		t.Fatalf("a 32 MiB window: undecodable %q", d.Undecodable)
	}
}

// TestDecodeBodyCapEachCoding: every decoder stops at the cap, at the cost
// of about the cap plus the decoder's window, not of the whole body.
func TestDecodeBodyCapEachCoding(t *testing.T) {
	const limit = 1 << 20
	// Twice the allocation allowed below: a decoder that read it all would
	// be caught by the allocation it made.
	plain := make([]byte, 2*(4*limit+maxZstdWindow))
	for _, coding := range []string{"gzip", "br", "zstd", "zlib", "deflate"} {
		z := compress(t, coding, plain)
		name := strings.Replace(coding, "zlib", "deflate", 1)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d := decodeBody(encoded(name), z, limit)
		runtime.ReadMemStats(&after)
		if d.Undecodable != name+": decodes to more than 1 MiB" || !bytes.Equal(d.Text, z) {
			t.Errorf("%s: undecodable %q", coding, d.Undecodable)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*limit+maxZstdWindow {
			t.Errorf("%s: stopping at 1 MiB allocated %d KiB", coding, alloc>>10)
		}
		if d := decodeBody(encoded(name), compress(t, coding, plain[:limit]), limit); len(d.Text) != limit || d.Undecodable != "" {
			t.Errorf("%s: a body of exactly the cap: %d bytes, %q", coding, len(d.Text), d.Undecodable)
		}
	}
}
