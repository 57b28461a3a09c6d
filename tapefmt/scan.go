package tapefmt

import (
	"errors"
	"io"
	"strings"
	"sync"
)

// scanner reads the records of a tape one after another through a window,
// checking each record's CRC. It never allocates more than the largest
// record it has to hold.
type scanner struct {
	ra       io.ReaderAt
	off, end int64 // next record, and where records stop
	buf      []byte
	bufOff   int64  // file offset of buf[0]
	seq      uint64 // sequence number of the next frame
	// noCRC skips the frame CRC checks. Verify uses it on its fast pass:
	// when the hash chain over the same bytes matches, every frame CRC does
	// too, and a mismatch sends Verify back over the tape with CRCs to name
	// the frame. Blob CRCs are always checked: blobs are not in the chain.
	noCRC bool
}

// record is one frame or blob record; bytes are valid until the next call.
type record struct {
	off   int64
	typ   byte
	bytes []byte // header and payload
	frame Frame  // for frames, Payload aliases bytes
}

const scanWindow = 1 << 20

// windows recycles scan buffers: walking a tape is frequent (every open of a
// torn tape, every verify, every All) and a window is up to a megabyte.
var windows = sync.Pool{New: func() any { return new([]byte) }}

func newScanner(ra io.ReaderAt, start, end int64) *scanner {
	return &scanner{ra: ra, off: start, end: end, buf: *windows.Get().(*[]byte)}
}

// release returns the window to the pool; the scanner must not be used after.
func (s *scanner) release() {
	if cap(s.buf) <= scanWindow {
		b := s.buf[:0]
		windows.Put(&b)
	}
	s.buf = nil
}

// window returns n bytes at s.off, reading more of the file as needed.
func (s *scanner) window(n int64) ([]byte, error) {
	if s.off+n > s.end {
		return nil, formatErr(s.off, "torn record: %d bytes needed, %d left in the file", n, s.end-s.off)
	}
	lo := s.off - s.bufOff
	if lo >= 0 && lo+n <= int64(len(s.buf)) {
		return s.buf[lo : lo+n], nil
	}
	size := min(max(n, scanWindow), s.end-s.off)
	if int64(cap(s.buf)) < size {
		s.buf = make([]byte, size, max(size, min(scanWindow, s.end-s.off)))
	}
	s.buf = s.buf[:size]
	if _, err := s.ra.ReadAt(s.buf, s.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	s.bufOff = s.off
	return s.buf[:n], nil
}

// minRecord is the smallest record header; every record needs this many bytes.
const minRecord = frameHeaderSize

// next reads the next record into r; it returns io.EOF at the end, or a
// *FormatError for a record that is torn, unknown or fails its CRC. It is the
// hot loop of every walk over a tape, so it reads the header once.
func (s *scanner) next(r *record) error {
	if s.off >= s.end {
		return io.EOF
	}
	h, err := s.window(minRecord)
	if err != nil {
		return err
	}
	r.off, r.typ = s.off, h[0]
	switch r.typ {
	case recFrame:
		err = s.nextFrame(r, h)
	case recBlob:
		err = s.nextBlob(r)
	default:
		err = formatErr(s.off, "unknown record type 0x%02x", r.typ)
	}
	if err != nil {
		return err
	}
	s.off += int64(len(r.bytes))
	return nil
}

func (s *scanner) nextFrame(r *record, h []byte) error {
	n, err := parseFrameHeader(h, s.off, s.seq, &r.frame)
	if err != nil {
		return err
	}
	s.seq++
	if r.bytes, err = s.window(frameHeaderSize + int64(n)); err != nil {
		return err
	}
	r.frame.Payload = r.bytes[frameHeaderSize:]
	if s.noCRC {
		return nil
	}
	return checkFrameCRC(r.bytes, &r.frame)
}

func (s *scanner) nextBlob(r *record) error {
	h, err := s.window(blobHeaderSize)
	if err != nil {
		return err
	}
	bh, err := parseBlobHeader(h, s.off)
	if err != nil {
		return err
	}
	if r.bytes, err = s.window(blobHeaderSize + int64(bh.Stored)); err != nil {
		return err
	}
	if le.Uint32(r.bytes[44:]) != crcOf(r.bytes[:44], r.bytes[blobHeaderSize:]) {
		return formatErr(s.off, "blob %s: checksum mismatch", bh.Hash.Short())
	}
	return nil
}

// Recovery says what opening a tape without a footer kept and dropped.
type Recovery struct {
	FileSize      int64  `json:"file_size"`      // bytes in the file
	ValidEnd      int64  `json:"valid_end"`      // bytes kept: the end of the last whole step
	FramesKept    int    `json:"frames_kept"`    // frames up to and including the last step boundary
	FramesDropped int    `json:"frames_dropped"` // whole frames after it (a partial step), not counting a torn one
	BlobsDropped  int    `json:"blobs_dropped"`  // blobs after it
	Reason        string `json:"reason"`         // why the scan stopped
	// Damaged says the scan stopped at bytes that are no record, before
	// the end of the file and not zeros to it (a torn write ends in a cut
	// record, a crash in zeros): the tape was damaged or written over
	// there, its footer with it, rather than not closed.
	Damaged bool `json:"damaged,omitempty"`
}

// BytesDropped is how many bytes of the file lie past the last whole step.
func (r *Recovery) BytesDropped() int64 { return r.FileSize - r.ValidEnd }

// scanIndex is what a recovery scan rebuilds.
type scanIndex struct {
	frames []byte // frame table
	blobs  map[Hash]blobLoc
	head   Hash
	steps  uint64
}

// damagedAt reports whether err, where a recovery scan stopped, is damage
// rather than the end of a tape that was not closed. Not damage: a record
// cut by the end of the file (a torn write); fewer bytes after the last
// record than the index of the records scanned (their frame and blob
// tables and the footer: a Close cut short); zeros to the end (what a
// crash can leave where the file was extended). Damage: anything else,
// an index that Close wrote whole and does not read among it.
func damagedAt(ra io.ReaderAt, size int64, err error, index int64) bool {
	fe, ok := errors.AsType[*FormatError](err)
	if !ok || strings.HasPrefix(fe.Msg, "torn record") || size-fe.Offset < index {
		return false
	}
	buf := make([]byte, 64<<10)
	for off := fe.Offset; off < size; off += int64(len(buf)) {
		n, rerr := ra.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		for _, b := range buf[:n] {
			if b != 0 {
				return true
			}
		}
		if rerr != nil {
			return false
		}
	}
	return false
}

// recoverScan reads every record of a tape that has no footer and cuts it
// back to the last step boundary.
func recoverScan(ra io.ReaderAt, size int64) (*scanIndex, *Recovery) {
	rec := &Recovery{FileSize: size, ValidEnd: fileHeaderSize, Reason: "end of file"}
	idx := &scanIndex{blobs: map[Hash]blobLoc{}}
	cut := scanIndex{}
	var seq uint64
	chain := newChain()
	sc := newScanner(ra, fileHeaderSize, size)
	defer sc.release()
	var r record
	for {
		err := sc.next(&r)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rec.Reason = err.Error()
				rec.Damaged = damagedAt(ra, size, err, 16*int64(seq)+48*int64(len(idx.blobs))+footerSize)
			}
			break
		}
		if r.typ == recBlob {
			bh, _ := parseBlobHeader(r.bytes, r.off)
			idx.blobs[bh.Hash] = blobLoc{off: r.off, raw: bh.RawLen, depth: bh.Depth}
			continue
		}
		seq++
		if r.frame.Kind == KindStep {
			chain.link()
		}
		chain.Write(r.bytes)
		idx.frames = appendFrameEntry(idx.frames, &r.frame)
		if r.frame.Kind == KindStep {
			idx.steps++
		}
		if r.frame.Kind.Boundary() {
			rec.ValidEnd, rec.FramesKept = sc.off, int(seq)
			cut = scanIndex{frames: idx.frames, head: chain.head(), steps: idx.steps}
		}
	}
	rec.FramesDropped = int(seq) - rec.FramesKept
	cut.blobs = blobsBefore(idx.blobs, rec)
	return &cut, rec
}

// blobsBefore keeps the blobs before the cut and counts the others dropped.
func blobsBefore(blobs map[Hash]blobLoc, rec *Recovery) map[Hash]blobLoc {
	kept := make(map[Hash]blobLoc, len(blobs))
	for h, loc := range blobs {
		if loc.off < rec.ValidEnd {
			kept[h] = loc
		} else {
			rec.BlobsDropped++
		}
	}
	return kept
}
