package tapefmt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Version is the tape format version this package writes. Readers accept
// versions up to and including it.
const Version = 1

// Fixed sizes of the on-disk structures. FORMAT.md documents every byte.
const (
	fileHeaderSize  = 64  // magic, version, created, tape id, CRC
	frameHeaderSize = 24  // record type, kind, schema, length, time, stream, CRC
	blobHeaderSize  = 48  // record type, encoding, depth, length, hash, raw length, CRC
	frameEntrySize  = 16  // one frame in the footer index: offset and kind, time
	blobEntrySize   = 48  // one blob in the footer index
	footerSize      = 128 // the fixed trailer at the very end of a closed tape
)

// Limits that keep a hostile tape from costing unbounded memory or time.
const (
	// MaxPayload is the largest frame payload accepted; larger data belongs in a blob.
	MaxPayload = 16 << 20
	// MaxBlobSize is the largest decoded blob accepted.
	MaxBlobSize = 256 << 20
	// maxDeltaDepth bounds how many delta blobs must be decoded to reach a keyframe.
	maxDeltaDepth = 64
	// deltaKeyframeEvery bounds a lane's delta chain: a blob whose base is
	// already this deep less one is stored whole.
	deltaKeyframeEvery = 32
)

// Record types: the first byte of every record after the file header.
const (
	recFrame = 'F'
	recBlob  = 'B'
)

// Blob encodings (byte 1 of a blob record).
const (
	encRaw       = 0 // stored bytes are the blob
	encZstd      = 1 // stored bytes are one zstd frame
	encDelta     = 2 // base offset, prefix, suffix, then the middle bytes raw
	encDeltaZstd = 3 // as encDelta, the middle bytes zstd-compressed
)

var (
	fileMagic   = [8]byte{0x89, 'J', 'B', 'X', '\r', '\n', 0x1a, '\n'}
	footerMagic = [8]byte{'J', 'B', 'X', 'I', 'N', 'D', 'E', 'X'}
	le          = binary.LittleEndian
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// Sentinel errors. Errors about bytes on disk are *FormatError values instead.
var (
	// ErrNotSealed means a tape carries no seal to check.
	ErrNotSealed = errors.New("tape is not sealed")
	// ErrSeal means the seal does not match the key and the chain head.
	ErrSeal = errors.New("seal does not match")
	// ErrNoFooter means an operation needs a closed tape and this one has none.
	ErrNoFooter = errors.New("tape has no footer (it was not closed)")
	// ErrBlobNotFound means no blob with the asked hash is on the tape.
	ErrBlobNotFound = errors.New("blob not found")
	// ErrFrameRange means a frame number past the end of the tape.
	ErrFrameRange = errors.New("frame out of range")
	// ErrClosed means a write to a closed Writer.
	ErrClosed = errors.New("writer is closed")
)

// FormatError reports bytes that are not a valid tape: where, and what is wrong.
type FormatError struct {
	Offset int64  // byte offset in the file where the problem starts
	Frame  int64  // frame sequence number involved, or -1 when none
	Msg    string // what is wrong
}

func (e *FormatError) Error() string {
	if e.Frame >= 0 {
		return fmt.Sprintf("frame %d at offset %d: %s", e.Frame, e.Offset, e.Msg)
	}
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// ReadError reports bytes that did not arrive (an I/O error; for a tape
// in a store, a request that failed): not damage, and reading again may
// work.
type ReadError struct {
	Offset int64
	Err    error
}

func (e *ReadError) Error() string { return fmt.Sprintf("read at %d: %v", e.Offset, e.Err) }

func (e *ReadError) Unwrap() error { return e.Err }

func formatErr(off int64, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Frame: -1, Msg: fmt.Sprintf(format, args...)}
}

func frameErr(off int64, seq uint64, format string, args ...any) *FormatError {
	return &FormatError{Offset: off, Frame: int64(seq), Msg: fmt.Sprintf(format, args...)}
}

// crcOf is the CRC32C of head followed by body.
func crcOf(head, body []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, head), castagnoli, body)
}
