package tapefmt

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Tape is an open tape for reading. A closed tape opens in O(1) through its
// footer; one without a footer is scanned and cut back to its last whole
// step (see Recovered). A Tape is safe for concurrent use.
type Tape struct {
	ra     io.ReaderAt
	path   string // the file's, when Open opened one
	size   int64
	closer io.Closer
	hdr    fileHeader
	ft     footer
	closed bool      // the tape has a valid footer
	rec    *Recovery // set when the tape was opened by scanning

	// tmu guards the tables (frames, blobs, blobOffs, blobAt), set once
	// each; mu the decoding of blobs (cache, decoded), which on a remote
	// tape may wait on the network: reading a frame never waits for it.
	tmu     sync.Mutex
	frames  []byte           // frame table in memory: scanned tapes, or loaded on demand
	blobs   map[Hash]blobLoc // blob table in memory, loaded on first use
	mu      sync.Mutex
	cache   blobCache
	decoded int64 // bytes of blobs decoded so far, against decodeBudget

	// remote is ra when it reads by round trips (RemoteReader); blobOffs
	// and blobAt, the blob records' offsets in order and the address at
	// each, are worked out for it (blobOffsets).
	remote   RemoteReader
	blobOffs []int64
	blobAt   map[int64]Hash

	// mem is the whole file once Preload read it: reads are served from it.
	mem atomic.Pointer[[]byte]
}

// RemoteOpener opens a tape that a URL names (scheme://…) for reading by
// ranges; it reports ok false for a name it does not take.
type RemoteOpener func(name string) (ra io.ReaderAt, size int64, closer io.Closer, ok bool, err error)

// IsRemote reports whether a tape's name is a URL (scheme://…), a tape in
// a store, rather than a path: such a tape has no folder beside it here.
func IsRemote(name string) bool { return strings.Contains(name, "://") }

// OpenWith opens the remote tape a URL names when remote takes it (a
// store's tape URLs, package tapestore), else the tape at path. A remote
// tape must be whole: one that ends in no footer is ErrNoFooter, never
// scanned for what it holds. The caller passes the opener in: tapefmt
// holds none of its own.
func OpenWith(path string, remote RemoteOpener) (*Tape, error) {
	if remote == nil || !IsRemote(path) {
		return Open(path)
	}
	ra, size, closer, ok, err := remote(path)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Open(path)
	}
	t, err := NewWholeReader(ra, size)
	if err != nil {
		closer.Close()
		if errors.Is(err, ErrNoFooter) {
			return nil, fmt.Errorf("%s: %w: half uploaded, or torn before it was uploaded", path, err)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.closer = closer
	return t, nil
}

// Open opens the tape in the file at path (OpenWith opens a store's).
func Open(path string) (*Tape, error) {
	// A named pipe is not opened at all: the open would wait for a writer
	// (every jukebox ls of a folder holding one hung, deaf to Ctrl-C).
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return nil, fmt.Errorf("%s: %w", path, notRegular(st.Mode()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open tape: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open tape: %w", err)
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, notRegular(st.Mode()))
	}
	t, err := NewReader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.closer, t.path = f, path
	return t, nil
}

// notRegular is the FormatError of a file that is no regular file: a
// named pipe, a socket or a device holds no tape.
func notRegular(m fs.FileMode) error {
	what := "a device"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	}
	return formatErr(0, "not a tape: %s, not a regular file", what)
}

// NewReader opens a tape held by ra, size bytes long.
func NewReader(ra io.ReaderAt, size int64) (*Tape, error) {
	t := &Tape{ra: ra, size: size}
	t.remote, _ = ra.(RemoteReader)
	hb := make([]byte, fileHeaderSize)
	if size < fileHeaderSize {
		return nil, formatErr(0, "file is %d bytes, shorter than a tape header (%d)", size, fileHeaderSize)
	}
	if err := t.readAt(hb, 0); err != nil {
		return nil, err
	}
	var err error
	if t.hdr, err = parseFileHeader(hb); err != nil {
		return nil, err
	}
	if size >= fileHeaderSize+footerSize {
		fb := make([]byte, footerSize)
		if err := t.readAt(fb, size-footerSize); err != nil {
			return nil, err
		}
		if t.ft, t.closed, err = parseFooter(fb, size); err != nil {
			return nil, err
		}
	}
	if !t.closed {
		idx, rec := recoverScan(ra, size)
		t.rec, t.frames, t.blobs = rec, idx.frames, idx.blobs
		t.ft = footer{recordsEnd: rec.ValidEnd, frames: uint64(len(idx.frames) / frameEntrySize), head: idx.head, steps: idx.steps}
	}
	return t, nil
}

// Preload reads a tape file of at most max bytes whole, in one read, for
// a caller about to read most of it (a replay indexing every call): later
// reads come from memory, not a system call each. A larger tape, or one
// read by round trips (a store's), is left as it is.
func (t *Tape) Preload(max int64) {
	if t.remote != nil || t.size > max || t.mem.Load() != nil {
		return
	}
	b := make([]byte, t.size)
	if n, err := t.ra.ReadAt(b, 0); n < len(b) || err != nil && !errors.Is(err, io.EOF) {
		return // each read says why, as before
	}
	t.mem.Store(&b)
}

// readerAt is what reads the tape: the file, or its copy in memory.
func (t *Tape) readerAt() io.ReaderAt {
	if m := t.mem.Load(); m != nil {
		return bytes.NewReader(*m)
	}
	return t.ra
}

// Close releases the file.
func (t *Tape) Close() error {
	if t.closer != nil {
		return t.closer.Close()
	}
	return nil
}

func (t *Tape) readAt(b []byte, off int64) error {
	if off < 0 || off+int64(len(b)) > t.size {
		return formatErr(off, "read of %d bytes past the end of the %d-byte file", len(b), t.size)
	}
	if m := t.mem.Load(); m != nil {
		copy(b, (*m)[off:])
		return nil
	}
	if _, err := t.ra.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && len(b) > 0) {
		return &ReadError{Offset: off, Err: err}
	}
	return nil
}

// Len returns the number of frames.
func (t *Tape) Len() int { return int(t.ft.frames) }

// Steps returns the number of step boundaries (step.commit frames).
func (t *Tape) Steps() int { return int(t.ft.steps) }

// Head returns the chain head over every frame.
func (t *Tape) Head() Hash { return t.ft.head }

// ID returns the random tape id from the header.
func (t *Tape) ID() [16]byte { return t.hdr.ID }

// Created returns the wall-clock time the recording started.
func (t *Tape) Created() time.Time { return t.hdr.Created }

// Size returns the file size in bytes.
func (t *Tape) Size() int64 { return t.size }

// Sealed reports whether the tape carries a seal.
func (t *Tape) Sealed() bool { return t.closed && t.ft.flags&footerSealed != 0 }

// Recovered returns what a scan kept and dropped, or nil when the tape was
// closed properly and opened through its footer.
func (t *Tape) Recovered() *Recovery { return t.rec }

// entry returns row i of the frame table: from memory when loaded, else one
// read of 16 bytes.
func (t *Tape) entry(i int) (frameEntry, error) {
	if i < 0 || i >= t.Len() {
		return frameEntry{}, fmt.Errorf("%w: frame %d of %d", ErrFrameRange, i, t.Len())
	}
	t.tmu.Lock()
	mem := t.frames
	t.tmu.Unlock()
	if mem != nil {
		return parseFrameEntry(mem[i*frameEntrySize:]), nil
	}
	var b [frameEntrySize]byte
	if err := t.readAt(b[:], t.ft.recordsEnd+int64(i)*frameEntrySize); err != nil {
		return frameEntry{}, err
	}
	return parseFrameEntry(b[:]), nil
}

// Frame returns frame i in O(1): one index read and two record reads
// (header, then payload). Its CRC is checked, and its kind and time against
// the index entry.
func (t *Tape) Frame(i int) (Frame, error) {
	return t.frameIn(i, nil, 0)
}

// frameIn is Frame, reading the record from win (the file's bytes from
// offset at) when it lies there.
func (t *Tape) frameIn(i int, win []byte, at int64) (Frame, error) {
	e, err := t.entry(i)
	if err != nil {
		return Frame{}, err
	}
	if e.off < fileHeaderSize || e.off+frameHeaderSize > t.ft.recordsEnd {
		return Frame{}, frameErr(t.ft.recordsEnd+int64(i)*frameEntrySize, uint64(i), "index entry points outside the records")
	}
	inWin := func(off, n int64) []byte {
		if off >= at && off+n <= at+int64(len(win)) {
			return win[off-at : off-at+n]
		}
		return nil
	}
	var head [frameHeaderSize]byte
	if b := inWin(e.off, frameHeaderSize); b != nil {
		copy(head[:], b)
	} else if err := t.readAt(head[:], e.off); err != nil {
		return Frame{}, err
	}
	var f Frame
	n, err := parseFrameHeader(head[:], e.off, uint64(i), &f)
	if err != nil {
		return Frame{}, err
	}
	if f.Kind != e.kind || f.Time != e.time || e.off+frameHeaderSize+int64(n) > t.ft.recordsEnd {
		return Frame{}, frameErr(e.off, uint64(i), "record does not match its index entry")
	}
	rec := make([]byte, frameHeaderSize+int(n))
	copy(rec, head[:])
	if b := inWin(e.off+frameHeaderSize, int64(n)); b != nil {
		copy(rec[frameHeaderSize:], b)
	} else if err := t.readAt(rec[frameHeaderSize:], e.off+frameHeaderSize); err != nil {
		return Frame{}, err
	}
	f.Payload = rec[frameHeaderSize:]
	return f, checkFrameCRC(rec, &f)
}

// maxSpanRead bounds the bytes FramesIn reads at once.
const maxSpanRead = 4 << 20

// FramesIn calls fn with frames i to j-1 (clamped to the tape) in order,
// each as Frame returns it, until fn returns false: the records between them are read in one
// read when they lie within a few MB of each other (the blobs between
// frames included), else one frame at a time. A search that reads every
// frame makes one system call per stretch of frames, not two per frame.
func (t *Tape) FramesIn(i, j int, fn func(k int, f Frame, err error) bool) {
	i, j = max(i, 0), min(j, t.Len())
	if i >= j {
		return
	}
	var win []byte
	var at int64
	first, err1 := t.entry(i)
	last, err2 := t.entry(j - 1)
	if err1 == nil && err2 == nil && first.off >= fileHeaderSize && last.off >= first.off {
		// The last frame's payload is read with the rest when it is
		// small; a big one is read on its own.
		end := min(last.off+frameHeaderSize+64<<10, t.ft.recordsEnd)
		if end-first.off <= maxSpanRead {
			win = make([]byte, end-first.off)
			if t.readAt(win, first.off) != nil {
				win = nil
			}
			at = first.off
		}
	}
	for k := i; k < j; k++ {
		if f, err := t.frameIn(k, win, at); !fn(k, f, err) {
			return
		}
	}
}

// loadFrameTable reads the whole frame table into memory once.
func (t *Tape) loadFrameTable() ([]byte, error) {
	t.tmu.Lock()
	defer t.tmu.Unlock()
	if t.frames != nil {
		return t.frames, nil
	}
	b, err := t.readChecked(int64(t.Len())*frameEntrySize, t.ft.recordsEnd, t.ft.frameCRC, "frame index")
	if err != nil {
		return nil, err
	}
	t.frames = b
	return b, nil
}

// checkFirst is the size past which a footer's table is checked before
// it is held: a footer claims a table as large as the file, and a sparse
// file of a few kilobytes on disk can claim gigabytes.
const checkFirst = 64 << 20

// readChecked reads n bytes at off, a table whose CRC32C is want. A table
// over checkFirst is read twice: its checksum first, a piece at a time,
// so that one that does not check is refused without being held.
func (t *Tape) readChecked(n, off int64, want uint32, what string) ([]byte, error) {
	if off < 0 || n < 0 || off+n > t.size {
		return nil, formatErr(off, "%s of %d bytes past the end of the %d-byte file", what, n, t.size)
	}
	if n > checkFirst {
		buf := make([]byte, 1<<20)
		var crc uint32
		for at := int64(0); at < n; at += int64(len(buf)) {
			piece := buf[:min(int64(len(buf)), n-at)]
			if err := t.readAt(piece, off+at); err != nil {
				return nil, err
			}
			crc = crc32.Update(crc, castagnoli, piece)
		}
		if crc != want {
			return nil, formatErr(off, "%s checksum mismatch", what)
		}
	}
	b := make([]byte, n)
	if err := t.readAt(b, off); err != nil {
		return nil, err
	}
	if crcOf(b, nil) != want {
		return nil, formatErr(off, "%s checksum mismatch", what)
	}
	return b, nil
}

// All yields every frame in order, reading the records sequentially. The
// Frame's Payload is valid only until the next iteration.
func (t *Tape) All() iter.Seq2[Frame, error] {
	return func(yield func(Frame, error) bool) {
		sc := newScanner(t.readerAt(), fileHeaderSize, t.ft.recordsEnd)
		defer sc.release()
		var r record
		for {
			err := sc.next(&r)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(Frame{}, err)
				return
			}
			if r.typ == recFrame && !yield(r.frame, nil) {
				return
			}
		}
	}
}

// Frames yields the frames of the given kinds (all when none are given) in
// order, using the index to skip the others. Payloads are freshly allocated.
func (t *Tape) Frames(kinds ...Kind) iter.Seq2[Frame, error] {
	var want [256]bool
	for _, k := range kinds {
		want[k] = true
	}
	return func(yield func(Frame, error) bool) {
		table, err := t.loadFrameTable()
		if err != nil {
			yield(Frame{}, err)
			return
		}
		for i := range t.Len() {
			if len(kinds) > 0 && !want[table[i*frameEntrySize+7]] {
				continue
			}
			f, err := t.Frame(i)
			if !yield(f, err) || err != nil {
				return
			}
		}
	}
}

// KindAt returns the kind and time of frame i from the index alone, without
// reading the record: cheap enough for a scrubber over a huge tape.
func (t *Tape) KindAt(i int) (Kind, time.Duration, error) {
	e, err := t.entry(i)
	return e.kind, e.time, err
}

// NewWholeReader opens a tape held by ra as NewReader does, but only a
// whole one: where the file ends in no footer it returns ErrNoFooter at
// once instead of scanning the records to recover what they hold, for a
// reader whose every read is a round trip (a tape in a store).
func NewWholeReader(ra io.ReaderAt, size int64) (*Tape, error) {
	// The header first: an object that is no tape is said to be so, not
	// taken for a tape cut short.
	hb := make([]byte, min(size, fileHeaderSize))
	if _, err := ra.ReadAt(hb, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the header: %w", err)
	}
	if len(hb) < 8 || [8]byte(hb[:8]) != fileMagic {
		return nil, formatErr(0, "not a jukebox tape (bad magic)")
	}
	if size < fileHeaderSize+footerSize {
		return nil, ErrNoFooter
	}
	fb := make([]byte, footerSize)
	if _, err := ra.ReadAt(fb, size-footerSize); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the footer: %w", err)
	}
	if _, ok, err := parseFooter(fb, size); err != nil {
		return nil, err
	} else if !ok {
		return nil, ErrNoFooter
	}
	return NewReader(ra, size)
}
