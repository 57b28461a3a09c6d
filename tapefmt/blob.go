package tapefmt

import (
	"bytes"
	"encoding/binary"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Blob record layout (48-byte header, then the stored bytes):
//
//	0  u8   record type 'B'
//	1  u8   encoding: 0 raw, 1 zstd, 2 delta, 3 delta with a zstd middle
//	2  u16  delta depth: 0 for a whole blob, else 1 + the base's depth
//	4  u32  stored length
//	8  [32] BLAKE3-256 of the decoded blob (its address)
//	40 u32  decoded length
//	44 u32  CRC32C of bytes 0..43 and the stored bytes
//
// A delta's stored bytes are: u64 file offset of the base blob record (always
// before this record), uvarint prefix length and uvarint suffix length taken
// from the base, then the middle bytes (zstd-compressed for encoding 3). The
// blob is base[:prefix] + middle + base[len(base)-suffix:].
type blobHeader struct {
	Encoding uint8
	Depth    uint16
	Stored   uint32
	Hash     Hash
	RawLen   uint32
}

func (h *blobHeader) marshal(stored []byte) []byte {
	b := make([]byte, blobHeaderSize, blobHeaderSize+len(stored))
	b[0] = recBlob
	b[1] = h.Encoding
	le.PutUint16(b[2:], h.Depth)
	le.PutUint32(b[4:], h.Stored)
	copy(b[8:40], h.Hash[:])
	le.PutUint32(b[40:], h.RawLen)
	le.PutUint32(b[44:], crcOf(b[:44], stored))
	return append(b, stored...)
}

func parseBlobHeader(b []byte, off int64) (blobHeader, error) {
	var h blobHeader
	if b[0] != recBlob {
		return h, formatErr(off, "expected a blob record, found type 0x%02x", b[0])
	}
	h.Encoding, h.Depth = b[1], le.Uint16(b[2:])
	h.Stored, h.RawLen = le.Uint32(b[4:]), le.Uint32(b[40:])
	copy(h.Hash[:], b[8:40])
	switch {
	case h.Encoding > encDeltaZstd:
		return h, formatErr(off+1, "unknown blob encoding %d", h.Encoding)
	case h.RawLen > MaxBlobSize:
		return h, formatErr(off+40, "blob of %d bytes exceeds the %d-byte limit", h.RawLen, MaxBlobSize)
	case h.Stored > MaxBlobSize+1024:
		return h, formatErr(off+4, "stored blob of %d bytes exceeds the limit", h.Stored)
	case h.Depth > maxDeltaDepth:
		return h, formatErr(off+2, "delta depth %d exceeds %d", h.Depth, maxDeltaDepth)
	}
	return h, nil
}

// codec holds the zstd encoder and decoder, which are costly to build and
// safe for concurrent use through EncodeAll and DecodeAll.
var codec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	// Single-segment frames always carry their content size; without
	// the option, EncodeAll leaves it out for inputs under 256 bytes.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true))
	if err != nil {
		panic(err) // only on invalid options
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxMemory(MaxBlobSize), zstd.WithDecodeAllCapLimit(true))
	if err != nil {
		panic(err)
	}
	return enc, dec
})

// compress returns zstd(b) when that saves at least an eighth, else nil.
func compress(b []byte) []byte {
	if len(b) < 64 {
		return nil
	}
	enc, _ := codec()
	c := enc.EncodeAll(b, make([]byte, 0, len(b)/2))
	if len(c) > len(b)-len(b)/8 {
		return nil
	}
	return c
}

// maxZstdRatio bounds how much zstd data can expand: the densest block, a
// repeated byte, is a 4-byte header (3 bytes and 1 of data) for up to 128 KiB
// of output. The reader refuses a blob whose header claims more than this
// before it allocates anything.
const maxZstdRatio = (128 << 10) / 4

// decompress decodes zstd data that must yield exactly n bytes. A frame that
// declares its content size must declare n; one that does not (written by
// releases before the writer forced the size in) is decoded into a buffer
// of capacity n that the decoder may not grow, so a hostile blob cannot make
// it allocate more than the blob header promised.
func decompress(c []byte, n int, off int64) ([]byte, error) {
	if n > len(c)*maxZstdRatio {
		return nil, formatErr(off, "%d bytes of zstd data cannot decode to the %d bytes the header says", len(c), n)
	}
	var zh zstd.Header
	if err := zh.Decode(c); err != nil {
		return nil, formatErr(off, "zstd header: %v", err)
	}
	switch {
	case zh.DictionaryID != 0:
		return nil, formatErr(off, "zstd frame names dictionary %d; tapes use none", zh.DictionaryID)
	case zh.HasFCS && zh.FrameContentSize != uint64(n):
		return nil, formatErr(off, "zstd frame declares %d bytes, header says %d", zh.FrameContentSize, n)
	}
	_, dec := codec()
	out, err := dec.DecodeAll(c, make([]byte, 0, n))
	if err != nil {
		return nil, formatErr(off, "zstd: %v", err)
	}
	if len(out) != n {
		return nil, formatErr(off, "zstd data decodes to %d bytes, header says %d", len(out), n)
	}
	return out, nil
}

// commonAffixes returns the lengths of the longest common prefix and, in what
// is left, the longest common suffix of a and b.
func commonAffixes(a, b []byte) (prefix, suffix int) {
	n := min(len(a), len(b))
	prefix = commonPrefix(a[:n], b[:n])
	// The suffix is sought in what the prefix leaves of the shorter one.
	suffix = commonSuffix(a[len(a)-(n-prefix):], b[len(b)-(n-prefix):])
	return prefix, suffix
}

// affixBlock is how many bytes commonPrefix and commonSuffix compare at
// once (bytes.Equal's vector loop) before they look closer: a resent
// conversation shares tens of kilobytes with the body before it, 12 us
// a call a byte at a time, under 1 us so (BenchmarkCommonAffixes).
const affixBlock = 256

// commonPrefix is the length of the longest common prefix of a and b,
// which are as long as each other.
func commonPrefix(a, b []byte) int {
	i := 0
	for i+affixBlock <= len(a) && bytes.Equal(a[i:i+affixBlock], b[i:i+affixBlock]) {
		i += affixBlock
	}
	for i+8 <= len(a) && binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
		i += 8
	}
	for i < len(a) && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix is the length of the longest common suffix of a and b,
// which are as long as each other.
func commonSuffix(a, b []byte) int {
	n := len(a)
	i := 0 // bytes matched from the end
	for i+affixBlock <= n && bytes.Equal(a[n-i-affixBlock:n-i], b[n-i-affixBlock:n-i]) {
		i += affixBlock
	}
	for i+8 <= n && binary.LittleEndian.Uint64(a[n-i-8:]) == binary.LittleEndian.Uint64(b[n-i-8:]) {
		i += 8
	}
	for i < n && a[n-1-i] == b[n-1-i] {
		i++
	}
	return i
}

// encodeBlob chooses how to store data: as a delta against base when the
// two share most of their bytes, else whole, compressed when that pays.
func encodeBlob(data []byte, base []byte, baseOff int64, baseDepth uint16) (enc uint8, depth uint16, stored []byte) {
	if base != nil && baseDepth+1 < deltaKeyframeEvery {
		pre, suf := commonAffixes(base, data)
		if pre+suf >= len(data)/4 && pre+suf > 64 {
			mid := data[pre : len(data)-suf]
			st := binary.LittleEndian.AppendUint64(nil, uint64(baseOff))
			st = binary.AppendUvarint(st, uint64(pre))
			st = binary.AppendUvarint(st, uint64(suf))
			if c := compress(mid); c != nil {
				return encDeltaZstd, baseDepth + 1, append(st, c...)
			}
			return encDelta, baseDepth + 1, append(st, mid...)
		}
	}
	if c := compress(data); c != nil {
		return encZstd, 0, c
	}
	return encRaw, 0, data
}

// expandWhole decodes the stored bytes of a whole blob (encoding 0 or 1).
func expandWhole(enc uint8, st []byte, n int, off int64) ([]byte, error) {
	if enc == encZstd {
		return decompress(st, n, off)
	}
	if len(st) != n {
		return nil, formatErr(off, "raw blob is %d bytes, header says %d", len(st), n)
	}
	return st, nil
}

// applyDelta rebuilds an n-byte blob from a parsed delta (encoding 2 or 3)
// and its decoded base.
func applyDelta(enc uint8, d deltaRef, base []byte, n int, off int64) ([]byte, error) {
	pre, mid, suf, err := deltaParts(enc, d, base, n, off)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, n)
	out = append(out, pre...)
	out = append(out, mid...)
	return append(out, suf...), nil
}

// deltaParts checks a parsed delta (encoding 2 or 3) against its decoded
// base and an n-byte blob, and returns the blob's three parts: the
// base's prefix, the middle (decompressed), the base's suffix.
func deltaParts(enc uint8, d deltaRef, base []byte, n int, off int64) (pre, mid, suf []byte, err error) {
	// Compared without adding: both lengths come from the file, and their
	// sum may wrap around.
	take := uint64(min(len(base), n))
	if d.prefix > take || d.suffix > take-d.prefix {
		return nil, nil, nil, formatErr(off, "delta takes %d+%d bytes from a %d-byte base for a %d-byte blob", d.prefix, d.suffix, len(base), n)
	}
	mid, midLen := d.middle, n-int(d.prefix+d.suffix)
	if enc == encDeltaZstd {
		if mid, err = decompress(mid, midLen, off); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(mid) != midLen {
		return nil, nil, nil, formatErr(off, "delta middle is %d bytes, want %d", len(mid), midLen)
	}
	return base[:d.prefix], mid, base[uint64(len(base))-d.suffix:], nil
}

// readsBack reports whether stored bytes chosen by encodeBlob decode to
// data again, through the reader's own functions. The writer checks every
// blob this way before writing it; a delta's parts are compared where
// they are, without the blob made whole.
func readsBack(enc uint8, stored, data, base []byte) bool {
	switch enc {
	case encRaw, encZstd:
		got, err := expandWhole(enc, stored, len(data), 0)
		return err == nil && bytes.Equal(got, data)
	}
	// The record's own offset is not known yet; any offset past the base
	// passes parseDelta's backward-pointing check.
	d, err := parseDelta(stored, 1<<62)
	if err != nil {
		return false
	}
	pre, mid, suf, err := deltaParts(enc, d, base, len(data), 0)
	return err == nil && len(pre)+len(mid)+len(suf) == len(data) &&
		bytes.Equal(pre, data[:len(pre)]) && bytes.Equal(mid, data[len(pre):len(pre)+len(mid)]) &&
		bytes.Equal(suf, data[len(pre)+len(mid):])
}

// deltaRef is the parsed head of a delta's stored bytes.
type deltaRef struct {
	base           int64
	prefix, suffix uint64
	middle         []byte
}

func parseDelta(st []byte, off int64) (deltaRef, error) {
	var d deltaRef
	if len(st) < 8 {
		return d, formatErr(off, "delta blob too short")
	}
	d.base = int64(le.Uint64(st))
	st = st[8:]
	var n int
	if d.prefix, n = binary.Uvarint(st); n <= 0 {
		return d, formatErr(off+8, "delta prefix length is not a valid uvarint")
	}
	st = st[n:]
	if d.suffix, n = binary.Uvarint(st); n <= 0 {
		return d, formatErr(off+8, "delta suffix length is not a valid uvarint")
	}
	d.middle = st[n:]
	if d.base < fileHeaderSize || d.base >= off {
		return d, formatErr(off, "delta base offset %d does not point before this blob", d.base)
	}
	return d, nil
}
