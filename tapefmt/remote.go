package tapefmt

import (
	"io"
	"slices"
	"sort"
)

// Range is a span of a tape's bytes: Len bytes from Off. When they are not
// at hand, the Before bytes before Off are fetched with them (where a
// delta blob's bases lie).
type Range struct{ Off, Len, Before int64 }

// A RemoteReader is the io.ReaderAt of a tape whose every read is a round
// trip (a tape in a store, package tapestore). A Tape opened on one tells
// it ahead which records it is about to read, so that they come together,
// and keeps the whole blobs it decodes in the reader's cache by their
// address: a blob's address is its content, so a blob kept from one tape
// serves every tape that names it, and is never stale. A delta blob (a
// request that resends a conversation) is kept as its record, a few
// bytes, rather than decoded: a conversation's requests decoded would take
// the square of its length.
type RemoteReader interface {
	io.ReaderAt
	// Prefetch fetches the ranges ahead of their reads, concurrently and
	// in as few requests as their gaps allow. keep false says the bytes
	// are a blob's record, whose blob is kept by its address once decoded:
	// they need not be kept as they are. Errors are left to the reads.
	Prefetch(ranges []Range, keep bool)
	// Holds reports whether the bytes of r are at hand (no request
	// needed to read them).
	Holds(r Range) bool
	// CachedBlob is what KeepBlob kept under address h, nil if nothing
	// is; the Tape decodes it and checks it against h before using it.
	CachedBlob(h Hash) []byte
	// KeepBlob keeps a whole blob (not a delta) that the Tape decoded and
	// checked against h, in the form it was stored in (compressed as on
	// the tape), for every tape that names h.
	KeepBlob(h Hash, kept []byte)
	// KeepRange keeps the bytes of r, fetched already, as this tape's own:
	// a delta blob's record, whose content only makes sense with its bases
	// on this tape.
	KeepRange(r Range)
}

// Remote is the reader of a tape opened from a store, nil for one opened
// from a file or a reader.
func (t *Tape) Remote() RemoteReader { return t.remote }

// Path is the file the tape was opened from, "" for one opened from a
// store or a reader.
func (t *Tape) Path() string { return t.path }

// maxPrefetch bounds the bytes one Prefetch of frames asks for: a screen
// of frames is a few kilobytes, but a hostile tape's index may claim
// records of any size.
const maxPrefetch = 16 << 20

// baseWindow is how far before a delta's base a remote tape's blob read
// reaches: a delta's base is an earlier blob of its lane (the previous
// request body to the same endpoint, say), and so is the base's base, a
// few records back each; one request for the window brings most of a
// chain that would otherwise cost a round trip per link.
const baseWindow = 1 << 20

// Prefetch tells a tape read through a RemoteReader that the frames of
// each span (a first and a last frame, clamped to the tape) are about to
// be read, so that their records come in one round of requests rather
// than a request each. It does nothing for a tape in a file.
func (t *Tape) Prefetch(spans ...[2]int) {
	if t.remote == nil || t.Len() == 0 {
		return
	}
	table, err := t.loadFrameTable()
	if err != nil {
		return
	}
	offs := t.blobOffsets()
	var rs []Range
	var total int64
	for _, sp := range spans {
		for i := max(sp[0], 0); i <= min(sp[1], t.Len()-1); i++ {
			off := parseFrameEntry(table[i*frameEntrySize:]).off
			r := Range{Off: off, Len: t.endOf(off, table, offs) - off}
			if total += r.Len; total > maxPrefetch {
				break
			}
			if r.Len > 0 {
				rs = append(rs, r)
			}
		}
	}
	t.remote.Prefetch(rs, true)
}

// PrefetchFor is Prefetch when frame i's record is not at hand, and
// nothing when it is: a reader that misses brings the frames about it
// (a block of a listing), one that hits costs nothing.
func (t *Tape) PrefetchFor(i int, spans ...[2]int) {
	if !t.Holds(i) {
		t.Prefetch(spans...)
	}
}

// Holds reports whether frame i can be read without a request: always for
// a tape in a file; for a remote tape, when its record is at hand.
func (t *Tape) Holds(i int) bool {
	if t.remote == nil || i < 0 || i >= t.Len() {
		return true
	}
	table, err := t.loadFrameTable()
	if err != nil {
		return true // the read will say why
	}
	off := parseFrameEntry(table[i*frameEntrySize:]).off
	return t.remote.Holds(Range{Off: off, Len: t.endOf(off, table, t.blobOffsets()) - off})
}

// endOf is where the record at off ends, as far as the index tells: at
// the start of the next record (a frame in the frame table, a blob in
// offs, the blob offsets in order) or at records end. Offsets that make
// no sense (a hostile index) give a short or empty range; the reads
// themselves check every record.
func (t *Tape) endOf(off int64, table []byte, offs []int64) int64 {
	end := t.ft.recordsEnd
	n := len(table) / frameEntrySize
	i := sort.Search(n, func(i int) bool { return parseFrameEntry(table[i*frameEntrySize:]).off > off })
	if i < n {
		end = min(end, parseFrameEntry(table[i*frameEntrySize:]).off)
	}
	if j, _ := slices.BinarySearch(offs, off+1); j < len(offs) {
		end = min(end, offs[j])
	}
	return max(end, off)
}

// blobOffsets are the blob records' offsets in ascending order, worked
// out once from the blob table (a remote tape's only: a file needs none),
// with the address of the blob at each.
func (t *Tape) blobOffsets() []int64 {
	blobs, err := t.blobTable()
	if err != nil {
		return nil
	}
	t.tmu.Lock()
	defer t.tmu.Unlock()
	if t.blobOffs == nil {
		t.blobOffs = make([]int64, 0, len(blobs))
		t.blobAt = make(map[int64]Hash, len(blobs))
		for h, loc := range blobs {
			t.blobOffs = append(t.blobOffs, loc.off)
			t.blobAt[loc.off] = h
		}
		slices.Sort(t.blobOffs)
	}
	return t.blobOffs
}

// cachedBlob is the blob at record offset off from the remote reader's
// cache of blobs by address: decoded from its kept form (keptForm) with
// the checks of a blob record's, and checked against its address;
// callers hold t.mu.
func (t *Tape) cachedBlob(off int64) (decoded, bool) {
	t.tmu.Lock()
	h, ok := t.blobAt[off]
	t.tmu.Unlock()
	if t.remote == nil || !ok {
		return decoded{}, false
	}
	kept := t.remote.CachedBlob(h)
	if len(kept) < 5 || (kept[0] != encRaw && kept[0] != encZstd) {
		return decoded{}, false
	}
	n := le.Uint32(kept[1:])
	if n > MaxBlobSize {
		return decoded{}, false
	}
	b, err := expandWhole(kept[0], kept[5:], int(n), off)
	if err != nil || HashOf(b) != h {
		return decoded{}, false
	}
	return decoded{hash: h, data: b, shared: true}, true
}

// keptForm is how a whole blob is kept by its address: its encoding (raw
// or zstd, one byte), its decoded length (u32) and its stored bytes, as on
// the tape.
func keptForm(r blobRecord) []byte {
	b := make([]byte, 5, 5+len(r.stored))
	b[0] = r.hdr.Encoding
	le.PutUint32(b[1:], r.hdr.RawLen)
	return append(b, r.stored...)
}

// keepRemote gives the remote reader what it keeps of the blob record at
// off, read and checked: a whole blob by its address, a delta as the
// tape's own bytes. Callers hold t.mu.
func (t *Tape) keepRemote(off int64, r blobRecord) {
	if r.hdr.Encoding == encRaw || r.hdr.Encoding == encZstd {
		t.remote.KeepBlob(r.hdr.Hash, keptForm(r))
		return
	}
	t.remote.KeepRange(Range{Off: off, Len: blobHeaderSize + int64(len(r.stored))})
}

// fetchBlob asks the remote reader for the blob record at off, and, when
// it is not at hand, for window bytes before it where a delta's bases
// likely lie, in one request;
// callers hold t.mu. The frame table is in memory by then on a remote
// tape (the timeline loads it first); without it the record is taken to
// run to the next blob.
func (t *Tape) fetchBlob(off int64, window int64) {
	// A blob record is at most this long, whatever a hostile index says.
	t.tmu.Lock()
	frames, offs := t.frames, t.blobOffs
	t.tmu.Unlock()
	end := min(t.endOf(off, frames, offs), off+blobHeaderSize+MaxBlobSize+1024)
	if end > off {
		t.remote.Prefetch([]Range{{Off: off, Len: end - off, Before: min(window, off-fileHeaderSize)}}, false)
	}
}
