package llmwire

// Compressed HTTP bodies. The tape keeps a body as the upstream sent it
// (replay sends it again byte for byte, Content-Encoding and all); whatever
// reads a body for its meaning (usage, the turntable, diff, search, show)
// decodes it here first.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// maxDecodedBody bounds what one stored body may decode to. A compressed
// body that would grow past it (a decompression bomb) is left as stored,
// and decoding stops once the bound is passed, so it costs at most this
// much memory.
const maxDecodedBody = 64 << 20

// Coding says how a stored body was compressed and how decoding it went.
type Coding struct {
	// Encoding is the body's Content-Encoding: lower case, in the order the
	// codings were applied, "identity" left out, joined by ", ". It is ""
	// for a body that was not compressed.
	Encoding string
	// Undecodable says why a compressed body could not be decoded (corrupt
	// data, an unknown coding, more than 64 MiB once decoded); the
	// stored bytes stand in for the text then.
	Undecodable string
	// Truncated says the compressed data ended early, as a response cut off
	// mid-stream does: the text is what the bytes that arrived decode to.
	Truncated bool
}

// Note is the coding in a few words for a reader: "" for a body that was
// not compressed, else "gzip, decoded", "gzip, cut off: decoded what
// arrived" or "gzip, undecodable: REASON (shown as stored)".
func (c Coding) Note() string {
	switch {
	case c.Encoding == "":
		return ""
	case c.Undecodable != "":
		return c.Encoding + ", undecodable: " + c.Undecodable + " (shown as stored)"
	case c.Truncated:
		return c.Encoding + ", cut off: decoded what arrived"
	}
	return c.Encoding + ", decoded"
}

// DecodedBody is a stored HTTP body made readable.
type DecodedBody struct {
	// Text is the decoded body: the stored bytes themselves when the body
	// was not compressed or did not decode.
	Text []byte
	Coding
}

// DecodeBody decodes a stored body by the Content-Encoding in h: gzip
// (x-gzip), deflate (zlib-wrapped or raw, as browsers accept), br and
// zstd, stacked codings undone in reverse order, identity ignored. A body
// without a Content-Encoding is returned as it is, without a copy. A body
// that does not decode, or would decode to more than 64 MiB, keeps
// its stored bytes and says why in Undecodable.
func DecodeBody(h http.Header, body []byte) DecodedBody {
	return decodeBody(h, body, maxDecodedBody)
}

// PayloadBody decodes a blob by the headers of the frame payload p that
// names it: the body of an llm.request or llm.response. Any other blob is
// returned as it is.
func PayloadBody(p tapefmt.Payload, blob []byte) DecodedBody {
	switch p := p.(type) {
	case *tapefmt.LLMRequest:
		return DecodeBody(p.Header, blob)
	case *tapefmt.LLMResponse:
		return DecodeBody(p.Header, blob)
	}
	return DecodedBody{Text: blob}
}

func decodeBody(h http.Header, body []byte, limit int) DecodedBody {
	codings := contentCodings(h)
	d := DecodedBody{Text: body, Coding: Coding{Encoding: strings.Join(codings, ", ")}}
	text := body
	for i := len(codings) - 1; i >= 0 && len(text) > 0; i-- {
		out, err := decodeOne(codings[i], text, limit)
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			d.Truncated = true
		case err != nil:
			d.Undecodable = err.Error()
			return d
		}
		text = out
	}
	d.Text = text
	return d
}

// contentCodings lists the codings of every Content-Encoding header line,
// in the order they were applied.
func contentCodings(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			if c != "" && c != "identity" {
				out = append(out, c)
			}
		}
	}
	return out
}

// errTooLarge stops a body that decodes to more than the cap.
var errTooLarge = errors.New("llmwire: decoded body over the cap")

// decodeOne undoes one coding, reading at most limit bytes of output. A
// truncated input yields what it decoded to and io.ErrUnexpectedEOF.
func decodeOne(coding string, data []byte, limit int) ([]byte, error) {
	r, err := decoder(coding, data)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", coding, err)
	}
	defer r.Close()
	out, err := readCapped(r, limit)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return out, err
	case errors.Is(err, errTooLarge):
		return nil, fmt.Errorf("%s: decodes to more than %s", coding, sizeText(limit))
	case err != nil:
		return nil, fmt.Errorf("%s: %w", coding, err)
	}
	return out, nil
}

// maxZstdWindow is the largest zstd window (the history a decoder keeps)
// accepted: RFC 9659 limits the zstd content coding to 8 MB windows.
const maxZstdWindow = 8 << 20

// decoder returns a reader that undoes one coding. Besides what it
// returns, a decoder holds its window: for zstd at most 8 MiB, or the
// declared size of a single-segment frame, refused past maxDecodedBody
// before anything is decoded; 16 MiB for brotli by its format; 32 KiB for
// deflate.
func decoder(coding string, data []byte) (io.ReadCloser, error) {
	br := bytes.NewReader(data)
	switch coding {
	case "gzip", "x-gzip":
		return gzip.NewReader(br)
	case "deflate":
		if isZlib(data) {
			return zlib.NewReader(br)
		}
		return flate.NewReader(br), nil
	case "br":
		return io.NopCloser(brotli.NewReader(br)), nil
	case "zstd":
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(maxDecodedBody), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return nil, errors.New("unknown content-encoding")
}

// isZlib says data starts with a zlib header (RFC 1950): deflate with a
// window of at most 32 KiB, and a check value that makes the first two
// bytes a multiple of 31. Raw deflate data rarely does.
func isZlib(data []byte) bool {
	return len(data) >= 2 && data[0]&0x0f == 8 && data[0]>>4 <= 7 && (uint16(data[0])<<8|uint16(data[1]))%31 == 0
}

// readCapped reads r to its end, failing with errTooLarge past limit bytes.
// It reads into pieces that double up to 8 MiB and joins them at the end,
// so a body stopped at the limit has cost about the limit in memory, not
// the sum of every larger buffer a growing slice would have left behind.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	var parts [][]byte
	total, size := 0, 32<<10
	for {
		p := make([]byte, min(size, limit+1-total))
		n, err := readFull(r, p)
		total += n
		parts = append(parts, p[:n])
		if err == io.EOF {
			return join(parts, total), nil
		}
		if err != nil {
			return join(parts, total), err
		}
		if total > limit {
			return nil, errTooLarge
		}
		size = min(size*2, 8<<20)
	}
}

// readFull fills p from r; unlike io.ReadFull it returns the reader's own
// error (io.EOF at the end), so a decoder's io.ErrUnexpectedEOF means the
// compressed data was cut off.
func readFull(r io.Reader, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := r.Read(p[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func join(parts [][]byte, total int) []byte {
	if len(parts) == 1 {
		return parts[0]
	}
	out := make([]byte, 0, total)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// sizeText is a byte count in MiB, or in bytes below one MiB.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
