package tapefmt

import (
	"crypto/rand"
	"time"
)

// fileHeader is the first 64 bytes of every tape.
//
//	0  [8]  magic 0x89 'J' 'B' 'X' '\r' '\n' 0x1a '\n'
//	8  u16  format version
//	10 u16  flags (zero)
//	12 u32  header size (64)
//	16 i64  created, Unix nanoseconds (wall clock)
//	24 [16] tape id (random)
//	40 [20] reserved, zero
//	60 u32  CRC32C of bytes 0..59
type fileHeader struct {
	Version uint16
	Created time.Time
	ID      [16]byte
	raw     []byte // the bytes as read, for the seal
}

func (h *fileHeader) marshal() []byte {
	b := make([]byte, fileHeaderSize)
	copy(b[0:8], fileMagic[:])
	le.PutUint16(b[8:], h.Version)
	le.PutUint32(b[12:], fileHeaderSize)
	le.PutUint64(b[16:], uint64(h.Created.UnixNano()))
	copy(b[24:40], h.ID[:])
	le.PutUint32(b[60:], crcOf(b[:60], nil))
	return b
}

func parseFileHeader(b []byte) (fileHeader, error) {
	var h fileHeader
	if len(b) < fileHeaderSize {
		return h, formatErr(0, "file is %d bytes, shorter than a tape header (%d)", len(b), fileHeaderSize)
	}
	if [8]byte(b[0:8]) != fileMagic {
		return h, formatErr(0, "not a jukebox tape (bad magic)")
	}
	if got, want := le.Uint32(b[60:]), crcOf(b[:60], nil); got != want {
		return h, formatErr(60, "header checksum mismatch")
	}
	h.Version = le.Uint16(b[8:])
	if h.Version == 0 || h.Version > Version {
		return h, formatErr(8, "format version %d is not supported (this jukebox reads up to %d)", h.Version, Version)
	}
	if size := le.Uint32(b[12:]); size != fileHeaderSize {
		return h, formatErr(12, "header size %d, want %d", size, fileHeaderSize)
	}
	h.Created = time.Unix(0, int64(le.Uint64(b[16:])))
	copy(h.ID[:], b[24:40])
	h.raw = b[:fileHeaderSize:fileHeaderSize]
	return h, nil
}

func newTapeID() [16]byte {
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails on supported platforms
	return id
}
