package tapefmt

import (
	"errors"
	"io"
)

// scanner reads the records of a tape one after another through a window,
// checking each record's CRC. It never allocates more than the largest
// record it has to hold.
type scanner struct {
	ra       io.ReaderAt
	off, end int64 // next record, and where records stop
	buf      []byte
	bufOff   int64 // file offset of buf[0]
}

// record is one frame or blob record; bytes are valid until the next call.
type record struct {
	off   int64
	typ   byte
	bytes []byte // header and payload
	frame Frame  // for frames, Payload aliases bytes
}

const scanWindow = 1 << 20

func newScanner(ra io.ReaderAt, start, end int64) *scanner {
	return &scanner{ra: ra, off: start, end: end}
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
		s.buf = make([]byte, size)
	}
	s.buf = s.buf[:size]
	if _, err := s.ra.ReadAt(s.buf, s.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	s.bufOff = s.off
	return s.buf[:n], nil
}

// next returns the next record, io.EOF at the end, or a *FormatError for a
// record that is torn, unknown or fails its CRC.
func (s *scanner) next() (record, error) {
	if s.off >= s.end {
		return record{}, io.EOF
	}
	b, err := s.window(1)
	if err != nil {
		return record{}, err
	}
	r := record{off: s.off, typ: b[0]}
	switch r.typ {
	case recFrame:
		err = s.nextFrame(&r)
	case recBlob:
		err = s.nextBlob(&r)
	default:
		err = formatErr(s.off, "unknown record type 0x%02x", r.typ)
	}
	if err != nil {
		return r, err
	}
	s.off += int64(len(r.bytes))
	return r, nil
}

func (s *scanner) nextFrame(r *record) error {
	h, err := s.window(frameHeaderSize)
	if err != nil {
		return err
	}
	f, n, err := parseFrameHeader(h, s.off)
	if err != nil {
		return err
	}
	if r.bytes, err = s.window(frameHeaderSize + int64(n)); err != nil {
		return err
	}
	f.Payload = r.bytes[frameHeaderSize:]
	r.frame = f
	return checkFrameCRC(r.bytes, &f)
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
	FileSize      int64  // bytes in the file
	ValidEnd      int64  // bytes kept: the end of the last whole step
	FramesKept    int    // frames up to and including the last step boundary
	FramesDropped int    // whole frames after it (a partial step), not counting a torn one
	BlobsDropped  int    // blobs after it
	Reason        string // why the scan stopped
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

// recoverScan reads every record of a tape that has no footer and cuts it
// back to the last step boundary.
func recoverScan(ra io.ReaderAt, size int64) (*scanIndex, *Recovery) {
	rec := &Recovery{FileSize: size, ValidEnd: fileHeaderSize, Reason: "end of file"}
	idx := &scanIndex{blobs: map[Hash]blobLoc{}}
	cut := scanIndex{}
	var seq uint64
	chain := newChain()
	sc := newScanner(ra, fileHeaderSize, size)
	for {
		r, err := sc.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				rec.Reason = err.Error()
			}
			break
		}
		if r.typ == recBlob {
			bh, _ := parseBlobHeader(r.bytes, r.off)
			idx.blobs[bh.Hash] = blobLoc{off: r.off, raw: bh.RawLen, depth: bh.Depth}
			continue
		}
		if r.frame.Seq != seq {
			rec.Reason = frameErr(r.off, r.frame.Seq, "sequence number %d, want %d", r.frame.Seq, seq).Error()
			break
		}
		seq++
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
	cut.blobs = make(map[Hash]blobLoc, len(idx.blobs))
	for h, loc := range idx.blobs {
		if loc.off < rec.ValidEnd {
			cut.blobs[h] = loc
		} else {
			rec.BlobsDropped++
		}
	}
	return &cut, rec
}
