package tapefmt

import "time"

// Frame is one record of the run: its header and its JSON payload.
//
// Frame record layout (24-byte header, then the payload):
//
//	0  u8  record type 'F'
//	1  u8  kind
//	2  u8  payload schema version
//	3  u8  flags (zero)
//	4  u32 payload length
//	8  i64 time offset in nanoseconds since the run started (monotonic clock)
//	16 u32 stream: which agent or process; 0 is the main one
//	20 u32 CRC32C of bytes 0..19 and the payload
//
// A frame's sequence number is its position among the frames, from 0; it
// is not stored (the hash chain fixes the order).
type Frame struct {
	Seq     uint64
	Kind    Kind
	Schema  uint8
	Stream  uint32
	Time    time.Duration
	Offset  int64  // where the record starts in the file
	Payload []byte // JSON; valid until the next call on the tape that yielded it
}

// Size is the number of bytes the frame's record takes in the file.
func (f Frame) Size() int64 { return frameHeaderSize + int64(len(f.Payload)) }

func (f *Frame) marshalHeader(b []byte) {
	b[0] = recFrame
	b[1] = byte(f.Kind)
	b[2] = f.Schema
	b[3] = 0
	le.PutUint32(b[4:], uint32(len(f.Payload)))
	le.PutUint64(b[8:], uint64(f.Time))
	le.PutUint32(b[16:], f.Stream)
	le.PutUint32(b[20:], crcOf(b[:20], f.Payload))
}

// parseFrameHeader reads the header of frame seq at file offset off into f
// and returns the payload length, checked against MaxPayload but not yet
// against the file.
func parseFrameHeader(b []byte, off int64, seq uint64, f *Frame) (uint32, error) {
	_ = b[frameHeaderSize-1]
	if b[0] != recFrame {
		return 0, formatErr(off, "expected a frame record, found type 0x%02x", b[0])
	}
	*f = Frame{Offset: off, Kind: Kind(b[1]), Schema: b[2], Seq: seq,
		Time: time.Duration(le.Uint64(b[8:])), Stream: le.Uint32(b[16:])}
	n := le.Uint32(b[4:])
	if n > MaxPayload {
		return 0, frameErr(off+4, f.Seq, "payload of %d bytes exceeds the %d-byte limit", n, MaxPayload)
	}
	if f.Time < 0 {
		return 0, frameErr(off+8, f.Seq, "negative time offset %d", f.Time)
	}
	return n, nil
}

// checkFrameCRC verifies the CRC of a whole frame record.
func checkFrameCRC(rec []byte, f *Frame) error {
	if got, want := le.Uint32(rec[20:]), crcOf(rec[:20], rec[frameHeaderSize:]); got != want {
		return frameErr(f.Offset, f.Seq, "checksum mismatch (stored %08x, computed %08x)", got, want)
	}
	return nil
}
