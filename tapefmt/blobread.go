package tapefmt

import (
	"bytes"
	"fmt"
	"slices"
)

// blobCacheBytes bounds the memory the decoded-blob cache may hold.
const blobCacheBytes = 64 << 20

// minDecodeBudget is the least a tape may decode in blobs over its life; the
// budget grows with the file (decodeBudget). A hostile tape whose small
// frames name a huge, highly compressed blob again and again gets a
// FormatError once it is spent, instead of costing unbounded time.
const minDecodeBudget = 8 << 30

// decodeBudget is how many bytes of blobs a tape of size bytes may decode.
func decodeBudget(size int64) int64 { return max(minDecodeBudget, size*1024) }

// blobCache keeps recently decoded blobs, already checked against their
// hashes, by record offset, so walking a delta chain or re-reading a blob
// costs one decode and one hash. Oldest entries go first.
type blobCache struct {
	m     map[int64]decoded
	order []int64
	bytes int
	// big holds the last blob too large for the cache, so that frames
	// naming the same large blob one after another decode it once.
	bigOff int64
	big    decoded
}

// decoded is a blob and the hash it was checked against; shared when it
// came from a remote reader's cache by address rather than from this
// tape's record (a check reads the record).
type decoded struct {
	hash   Hash
	data   []byte
	shared bool
}

func (c *blobCache) get(off int64) (decoded, bool) {
	if c.big.data != nil && c.bigOff == off {
		return c.big, true
	}
	d, ok := c.m[off]
	return d, ok
}

func (c *blobCache) put(off int64, d decoded) {
	if c.m == nil {
		c.m = map[int64]decoded{}
	}
	if len(d.data) > blobCacheBytes/4 {
		c.bigOff, c.big = off, d
		return
	}
	if old, ok := c.m[off]; ok { // a shared blob replaced by the record's
		c.bytes += len(d.data) - len(old.data)
		c.m[off] = d
		return
	}
	for c.bytes+len(d.data) > blobCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.m[old].data)
		delete(c.m, old)
	}
	c.m[off] = d
	c.order = append(c.order, off)
	c.bytes += len(d.data)
}

// Blob returns the blob with hash h, decoded and checked against its hash.
// The returned slice must not be modified. On a tape read through a
// RemoteReader it may come from the reader's cache of blobs by address
// (checked against h all the same) rather than from this tape's record:
// OwnBlob reads the record.
func (t *Tape) Blob(h Hash) ([]byte, error) { return t.blob(h, false) }

// OwnBlob is Blob decoded from this tape's own record, never from a cache
// of blobs by address: what a check of the tape reads.
func (t *Tape) OwnBlob(h Hash) ([]byte, error) { return t.blob(h, true) }

func (t *Tape) blob(h Hash, own bool) ([]byte, error) {
	blobs, err := t.blobTable()
	if err != nil {
		return nil, err
	}
	loc, ok := blobs[h]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrBlobNotFound, h)
	}
	if t.remote != nil {
		t.blobOffsets()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, err := t.decodeBlob(loc.off, maxDeltaDepth, blobRead{own: own})
	if err != nil {
		return nil, err
	}
	if d.hash != h {
		return nil, formatErr(loc.off, "the blob indexed as %s is %s", h.Short(), d.hash.Short())
	}
	return d.data, nil
}

// HasBlob reports whether the tape holds a blob with hash h.
func (t *Tape) HasBlob(h Hash) bool {
	blobs, err := t.blobTable()
	_, ok := blobs[h]
	return err == nil && ok
}

// blobTable returns the hash-to-offset map, reading it from the footer index
// on first use.
func (t *Tape) blobTable() (map[Hash]blobLoc, error) {
	t.tmu.Lock()
	defer t.tmu.Unlock()
	if t.blobs != nil {
		return t.blobs, nil
	}
	b, err := t.readChecked(int64(t.ft.blobs)*blobEntrySize, t.ft.blobTable, t.ft.blobCRC, "blob index")
	if err != nil {
		return nil, err
	}
	m := make(map[Hash]blobLoc, t.ft.blobs)
	for i := 0; i < len(b); i += blobEntrySize {
		off := int64(le.Uint64(b[i+32:]))
		if off < fileHeaderSize || off >= t.ft.recordsEnd {
			return nil, formatErr(t.ft.blobTable+int64(i), "blob index entry points outside the records")
		}
		m[Hash(b[i:i+32])] = blobLoc{off: off, raw: le.Uint32(b[i+40:])}
	}
	t.blobs = m
	return m, nil
}

// blobRead says how decodeBlob reads a remote tape's blob: own refuses
// the reader's cache by address (a check reads the tape's records), and
// window is how far before a record that is not at hand its fetch
// reaches, for the delta bases that lie there.
type blobRead struct {
	own    bool
	window int64
}

// decodeBlob reads and decodes the blob record at off and checks it against
// the hash in its header; budget bounds the delta chain still allowed. On a
// remote tape the blob may come from the reader's cache by address instead
// (marked shared in t.cache, where a check does not take it), and what is
// read is kept there (keepRemote). Callers hold t.mu.
func (t *Tape) decodeBlob(off int64, budget int, how blobRead) (decoded, error) {
	if d, ok := t.cache.get(off); ok && !(how.own && d.shared) {
		return d, nil
	}
	if !how.own {
		if d, ok := t.cachedBlob(off); ok {
			t.cache.put(off, d)
			return d, nil
		}
	}
	if t.remote != nil {
		t.fetchBlob(off, how.window)
	}
	b, rec, err := t.readBlob(off, budget, how)
	if err != nil {
		return decoded{}, err
	}
	h := rec.hdr.Hash
	if HashOf(b) != h {
		return decoded{}, formatErr(off, "blob content does not match its address %s", h.Short())
	}
	d := decoded{hash: h, data: b}
	t.cache.put(off, d)
	if t.remote != nil {
		t.keepRemote(off, rec)
	}
	return d, nil
}

// blobRecord is a blob record as read: its header and stored bytes.
type blobRecord struct {
	hdr    blobHeader
	stored []byte
}

// readBlob reads the record at off and expands its stored bytes.
func (t *Tape) readBlob(off int64, budget int, how blobRead) ([]byte, blobRecord, error) {
	if budget < 0 {
		return nil, blobRecord{}, formatErr(off, "delta chain longer than %d", maxDeltaDepth)
	}
	if off < fileHeaderSize || off+blobHeaderSize > t.ft.recordsEnd {
		return nil, blobRecord{}, formatErr(off, "blob offset outside the records")
	}
	hb := make([]byte, blobHeaderSize)
	if err := t.readAt(hb, off); err != nil {
		return nil, blobRecord{}, err
	}
	bh, err := parseBlobHeader(hb, off)
	if err != nil {
		return nil, blobRecord{}, err
	}
	if off+blobHeaderSize+int64(bh.Stored) > t.ft.recordsEnd {
		return nil, blobRecord{}, formatErr(off, "blob record runs past the records")
	}
	// Charged before decoding, so that failed decodes count too.
	if t.decoded += int64(bh.RawLen); t.decoded > decodeBudget(t.size) {
		return nil, blobRecord{}, formatErr(off, "its blobs decode to more than %d bytes, %d times the file: refusing (a hostile tape?)", decodeBudget(t.size), decodeBudget(t.size)/max(t.size, 1))
	}
	st := make([]byte, bh.Stored)
	if err := t.readAt(st, off+blobHeaderSize); err != nil {
		return nil, blobRecord{}, err
	}
	if le.Uint32(hb[44:]) != crcOf(hb[:44], st) {
		return nil, blobRecord{}, formatErr(off, "blob %s: checksum mismatch", bh.Hash.Short())
	}
	b, err := t.expand(bh, st, off, budget, how)
	if err != nil {
		return nil, blobRecord{}, err
	}
	if len(b) != int(bh.RawLen) {
		return nil, blobRecord{}, formatErr(off, "blob decodes to %d bytes, header says %d", len(b), bh.RawLen)
	}
	return b, blobRecord{bh, st}, nil
}

// expand turns stored bytes into the blob, reading a delta's base from the
// tape.
func (t *Tape) expand(bh blobHeader, st []byte, off int64, budget int, how blobRead) ([]byte, error) {
	if bh.Encoding == encRaw || bh.Encoding == encZstd {
		return expandWhole(bh.Encoding, st, int(bh.RawLen), off)
	}
	d, err := parseDelta(st, off)
	if err != nil {
		return nil, err
	}
	bd, err := t.decodeBlob(d.base, budget-1, blobRead{own: how.own, window: baseWindow})
	if err != nil {
		return nil, fmt.Errorf("base of delta blob at %d: %w", off, err)
	}
	return applyDelta(bh.Encoding, d, bd.data, int(bh.RawLen), off)
}

// sortedHashes returns the blob hashes in ascending order.
func sortedHashes(m map[Hash]blobLoc) []Hash {
	hs := make([]Hash, 0, len(m))
	for h := range m {
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b Hash) int { return bytes.Compare(a[:], b[:]) })
	return hs
}
