package tapefmt

import "time"

// The index follows the last record of a closed tape:
//
//	frame table: one 16-byte entry per frame, in sequence order
//	  0  u64 record offset in the low 56 bits, kind in the high 8
//	  8  i64 time offset, ns
//	blob table: one 48-byte entry per blob, sorted by hash
//	  0  [32] BLAKE3 hash
//	  32 u64  record offset
//	  40 u32  decoded length
//	  44 u32  reserved, zero
//	footer: 128 bytes, the last bytes of the file
//	  0   [8]  magic "JBXINDEX"
//	  8   u64  records end: offset of the frame table
//	  16  u64  frame count
//	  24  u64  blob count
//	  32  u64  blob table offset
//	  40  u32  CRC32C of the frame table
//	  44  u32  CRC32C of the blob table
//	  48  [32] chain head
//	  80  [32] seal: keyed BLAKE2b-256, zero when unsealed
//	  112 u64  step count
//	  120 u32  flags: bit 0 sealed
//	  124 u32  CRC32C of bytes 0..123

// frameEntry is one decoded row of the frame table.
type frameEntry struct {
	off  int64
	time time.Duration
	kind Kind
}

// maxOffset is the largest record offset a frame entry can hold.
const maxOffset = 1<<56 - 1

func appendFrameEntry(b []byte, f *Frame) []byte {
	var e [frameEntrySize]byte
	le.PutUint64(e[0:], uint64(f.Offset)|uint64(f.Kind)<<56)
	le.PutUint64(e[8:], uint64(f.Time))
	return append(b, e[:]...)
}

func parseFrameEntry(e []byte) frameEntry {
	v := le.Uint64(e[0:])
	return frameEntry{off: int64(v & maxOffset), kind: Kind(v >> 56), time: time.Duration(le.Uint64(e[8:]))}
}

// footer is the fixed trailer of a closed tape.
type footer struct {
	recordsEnd int64
	frames     uint64
	blobs      uint64
	blobTable  int64
	frameCRC   uint32
	blobCRC    uint32
	head       Hash
	seal       Hash
	steps      uint64
	flags      uint32
}

const footerSealed = 1

func (f *footer) marshal() []byte {
	b := make([]byte, footerSize)
	copy(b[0:8], footerMagic[:])
	le.PutUint64(b[8:], uint64(f.recordsEnd))
	le.PutUint64(b[16:], f.frames)
	le.PutUint64(b[24:], f.blobs)
	le.PutUint64(b[32:], uint64(f.blobTable))
	le.PutUint32(b[40:], f.frameCRC)
	le.PutUint32(b[44:], f.blobCRC)
	copy(b[48:80], f.head[:])
	copy(b[80:112], f.seal[:])
	le.PutUint64(b[112:], f.steps)
	le.PutUint32(b[120:], f.flags)
	le.PutUint32(b[124:], crcOf(b[:124], nil))
	return b
}

// parseFooter reads the trailer of a file of the given size. It returns ok
// false when there is no trailer (a torn tape); a trailer with a valid CRC
// whose numbers do not fit the file is a FormatError.
func parseFooter(b []byte, size int64) (f footer, ok bool, err error) {
	off := size - footerSize
	if len(b) != footerSize || [8]byte(b[0:8]) != footerMagic || le.Uint32(b[124:]) != crcOf(b[:124], nil) {
		return f, false, nil
	}
	f = footer{
		recordsEnd: int64(le.Uint64(b[8:])), frames: le.Uint64(b[16:]), blobs: le.Uint64(b[24:]),
		blobTable: int64(le.Uint64(b[32:])), frameCRC: le.Uint32(b[40:]), blobCRC: le.Uint32(b[44:]),
		steps: le.Uint64(b[112:]), flags: le.Uint32(b[120:]),
	}
	copy(f.head[:], b[48:80])
	copy(f.seal[:], b[80:112])
	if f.recordsEnd < fileHeaderSize || f.recordsEnd > off ||
		f.frames > uint64(off)/frameEntrySize || f.blobs > uint64(off)/blobEntrySize ||
		f.blobTable != f.recordsEnd+int64(f.frames)*frameEntrySize ||
		f.blobTable+int64(f.blobs)*blobEntrySize != off {
		return f, false, formatErr(off, "footer describes tables that do not fit the %d-byte file", size)
	}
	return f, true, nil
}

// writeIndex appends the frame table, blob table and footer.
func (w *Writer) writeIndex() error {
	ft := footer{recordsEnd: w.off, frames: w.seq, blobs: uint64(len(w.blobs)), steps: w.steps, head: w.headLocked()}
	ft.frameCRC = crcOf(w.frames, nil)
	if err := w.write(w.frames); err != nil {
		return err
	}
	ft.blobTable = w.off
	bt := blobTable(w.blobs)
	ft.blobCRC = crcOf(bt, nil)
	if err := w.write(bt); err != nil {
		return err
	}
	return w.write(ft.marshal())
}

// blobTable is the blob table: one entry per blob, sorted by hash.
func blobTable(blobs map[Hash]blobLoc) []byte {
	b := make([]byte, 0, len(blobs)*blobEntrySize)
	for _, h := range sortedHashes(blobs) {
		var e [blobEntrySize]byte
		copy(e[:32], h[:])
		le.PutUint64(e[32:], uint64(blobs[h].off))
		le.PutUint32(e[40:], blobs[h].raw)
		b = append(b, e[:]...)
	}
	return b
}
