package tapestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// A tape in a store is read where it lies, by ranged GETs of the bytes
// its reader asks for, each fetched once into a local cache:
//
//   - opening it takes a HEAD (size and ETag), then its header and its
//     last half MiB (footer and index) in two GETs at once;
//   - the turntable's rows come a screen at a time, each frame record
//     fetched by its exact range (tapefmt.Tape.Prefetch), all of a
//     screen's requests at once: one round trip for the first screen;
//   - a blob is fetched with the MiB before it, where its delta bases lie;
//     a whole blob is kept as stored under its BLAKE3 address (blobs/ in
//     the cache), so a blob fetched for one tape serves every tape that
//     names it, and a delta as its record with the tape's ranges;
//   - a reader that scans the tape (verify) is read ahead, growing to
//     16 MiB a request.
//
// The ranges of a tape (frames, index, delta records) are kept under the
// object's key, size and ETag (tapes/ in the cache); an upload never
// overwrites an object, so neither they nor a blob under its address are
// ever stale.

// openHead and openTail are the bytes opening a tape fetches from its
// start and end: the header, and the footer with an index of up to half
// a MiB (some 8,000 frames and as many blobs) before it; a bigger index
// takes one request more.
const openHead, openTail = 64 << 10, 512 << 10

// minFetch is the least a read that misses fetches: a frame read without
// a prefetch (its header, then its payload) then takes one request.
const minFetch = 64 << 10

// maxAhead bounds the read-ahead of a reader that reads in order: each
// request that continues the last one doubles, up to this.
const maxAhead = 16 << 20

// maxMem bounds the fetched bytes kept in memory (the disk cache has what
// is kept; without it, --no-cache, bytes let go are fetched again). A
// variable for tests.
var maxMem int64 = 64 << 20

// parallel bounds the GETs of one prefetch in flight at once.
const parallel = 32

// coalesce is the largest gap between two ranges of a prefetch fetched in
// one request: reading a gap this small costs less than a request.
const coalesce = 64 << 10

// A store that answers nothing must not hang a reader (the turntable
// waits on its reads): the HEAD that opens a tape, a small read and a
// sidecar file get requestTimeout; a ranged GET readTimeout (deadline.go).

// Opener is the tapefmt.RemoteOpener for store URLs: tapefmt.Open then
// reads a tape in a store as it reads a file. noCache keeps fetched bytes
// and blobs in memory only.
func Opener(noCache bool) tapefmt.RemoteOpener {
	return func(name string) (io.ReaderAt, int64, io.Closer, bool, error) {
		if !IsURL(name) {
			return nil, 0, nil, false, nil
		}
		loc, err := Parse(name)
		if err != nil {
			return nil, 0, nil, true, err
		}
		if loc.Name == "" {
			return nil, 0, nil, true, fmt.Errorf("%s names a store, not a tape: add NAME.jbx (jukebox ls %s lists them)", name, name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		o, err := openObject(ctx, loc, noCache)
		if err != nil {
			return nil, 0, nil, true, err
		}
		return o, o.size, o, true, nil
	}
}

// object is a store's object read by ranges through the cache; it is a
// tapefmt.RemoteReader.
type object struct {
	// ctx ends with Close, and with it every GET in flight (a store that
	// answers nothing must not hold a closing reader).
	ctx    context.Context
	cancel context.CancelFunc
	s      *Store
	key    string
	size   int64
	dir    string // the object's ranges on disk; "" keeps them in memory only
	blobs  string // blobs by address on disk; "" keeps none

	mu       sync.Mutex
	spans    []*span   // fetched ranges, by start; they may overlap
	inflight []*flight // ranges being fetched
	mem      int64     // bytes of spans in memory
	tick     uint64    // the use clock of spans
	lastEnd  int64     // where the last fetch for a read ended
	ahead    int64     // and the read-ahead it had
	gets     int       // ranged GETs made (for tests and benchmarks)
	rounds   int       // rounds of them: GETs made together count once
	// downErr, until downUntil, is the error of the last GET that failed:
	// reads fail with it at once rather than each waiting out a store
	// that answers nothing (a screen of rows would wait once a row).
	downErr   error
	downUntil time.Time
}

// span is a fetched range: its bytes in memory, or in the file named
// after it in the object's cache folder, or both.
type span struct {
	lo, hi int64
	data   []byte // nil when let go (it is on disk)
	file   string // "" when not on disk
	used   uint64
}

// flight is a range being fetched; done closes when it is kept (or not).
type flight struct {
	lo, hi int64
	done   chan struct{}
}

func openObject(ctx context.Context, loc Location, noCache bool) (*object, error) {
	s, err := Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	a, err := s.b.Attributes(ctx, loc.Name)
	if err != nil {
		err = s.tapeErr(ctx, loc.Name, err)
		s.Close()
		return nil, err
	}
	o := &object{s: s, key: loc.Name, size: a.Size}
	o.ctx, o.cancel = context.WithCancel(context.Background())
	if !noCache {
		base, err := CacheDir()
		if err != nil {
			s.Close()
			return nil, err
		}
		id := sha256.Sum256([]byte(loc.bucket + "\x00" + loc.Prefix + loc.Name + "\x00" + strconv.FormatInt(a.Size, 10) + "\x00" + a.ETag))
		o.dir = filepath.Join(base, "tapes", hex.EncodeToString(id[:12]))
		o.blobs = filepath.Join(base, "blobs")
		o.loadSpans()
	}
	// The header and the footer with the index before it, together.
	o.Prefetch([]tapefmt.Range{{Off: 0, Len: openHead}, {Off: o.size - openTail, Len: openTail}}, true)
	return o, nil
}

// Close ends the GETs in flight and releases the store.
func (o *object) Close() error {
	o.cancel()
	if o.dir != "" {
		trimCache()
	}
	return o.s.Close()
}

// ReadAt reads p at off: the bytes at hand from memory or disk, the rest
// fetched (at least minFetch bytes a request, more for a reader that
// reads in order).
func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= o.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), o.size)
	for {
		o.mu.Lock()
		gaps, wait := o.missing(off, end)
		if len(gaps) == 0 {
			err := o.copyOut(p[:end-off], off)
			o.trim(nil)
			o.mu.Unlock()
			if err != nil {
				continue // a span on disk did not read back: fetch it again
			}
			if end-off < int64(len(p)) {
				return int(end - off), io.EOF
			}
			return len(p), nil
		}
		if wait != nil {
			o.mu.Unlock()
			<-wait.done
			continue
		}
		var fs []*flight
		for _, g := range gaps {
			fs = append(fs, o.start(g.lo, o.readHi(g)))
		}
		o.mu.Unlock()
		if err := o.fetchAll(fs, true); err != nil {
			return 0, err
		}
	}
}

// Prefetch fetches the ranges that are not at hand (with the bytes Before
// them when they are not), those less than coalesce apart in one request,
// up to parallel requests at once (tapefmt.RemoteReader). Errors are left
// to the reads.
func (o *object) Prefetch(ranges []tapefmt.Range, keep bool) {
	o.mu.Lock()
	var want []gap
	for _, r := range ranges {
		lo, hi := max(r.Off, 0), min(r.Off+r.Len, o.size)
		if lo >= hi {
			continue
		}
		if gaps, _ := o.missing(lo, hi); len(gaps) > 0 && r.Before > 0 {
			lo = max(lo-r.Before, 0)
		}
		want = append(want, gap{lo, hi})
	}
	slices.SortFunc(want, func(a, b gap) int { return cmp.Compare(a.lo, b.lo) })
	var fs []*flight
	var cur *gap
	for _, w := range want {
		gaps, _ := o.missing(w.lo, w.hi)
		for _, g := range o.unclaimed(gaps) { // ranges in flight are left to their fetch
			if cur != nil && g.lo-cur.hi <= coalesce && !o.flying(cur.hi, g.lo) {
				cur.hi = max(cur.hi, g.hi)
				continue
			}
			if cur != nil {
				fs = append(fs, o.start(cur.lo, cur.hi))
			}
			cur = &gap{g.lo, g.hi}
		}
	}
	if cur != nil {
		fs = append(fs, o.start(cur.lo, cur.hi))
	}
	o.mu.Unlock()
	o.fetchAll(fs, keep)
}

// Holds reports whether r is at hand: in spans, none of it in flight
// (tapefmt.RemoteReader).
func (o *object) Holds(r tapefmt.Range) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	gaps, _ := o.missing(max(r.Off, 0), min(r.Off+r.Len, o.size))
	return len(gaps) == 0
}

// gap is a range not at hand.
type gap struct{ lo, hi int64 }

// missing is what of lo..hi no span holds, or, when some of it is being
// fetched, the first such flight to wait for. Callers hold o.mu.
func (o *object) missing(lo, hi int64) (gaps []gap, wait *flight) {
	at := lo
	for _, s := range o.spans {
		if s.lo > at {
			if s.lo >= hi {
				break
			}
			gaps = append(gaps, gap{at, s.lo})
		}
		at = max(at, s.hi)
		if at >= hi {
			break
		}
	}
	if at < hi {
		gaps = append(gaps, gap{at, hi})
	}
	for _, g := range gaps {
		for _, f := range o.inflight {
			if f.lo < g.hi && g.lo < f.hi {
				return gaps, f
			}
		}
	}
	return gaps, nil
}

// unclaimed is gaps less the ranges being fetched. Callers hold o.mu.
func (o *object) unclaimed(gaps []gap) []gap {
	for _, f := range o.inflight {
		var out []gap
		for _, g := range gaps {
			if f.hi <= g.lo || g.hi <= f.lo {
				out = append(out, g)
				continue
			}
			if g.lo < f.lo {
				out = append(out, gap{g.lo, f.lo})
			}
			if f.hi < g.hi {
				out = append(out, gap{f.hi, g.hi})
			}
		}
		gaps = out
	}
	return gaps
}

// flying reports whether some of lo..hi is being fetched. Callers hold o.mu.
func (o *object) flying(lo, hi int64) bool {
	for _, f := range o.inflight {
		if f.lo < hi && lo < f.hi {
			return true
		}
	}
	return false
}

// readHi is where the fetch of a read's gap ends: at least minFetch on,
// and for a read that continues the last fetch, twice its read-ahead (up
// to maxAhead); never past the next span or the end. Callers hold o.mu.
func (o *object) readHi(g gap) int64 {
	ahead := int64(minFetch)
	if g.lo == o.lastEnd && o.ahead > 0 {
		ahead = min(2*o.ahead, maxAhead)
	}
	hi := max(g.hi, g.lo+ahead)
	for _, s := range o.spans {
		if s.lo >= g.hi {
			hi = min(hi, s.lo)
			break
		}
	}
	for _, f := range o.inflight {
		if f.lo >= g.hi {
			hi = min(hi, f.lo)
		}
	}
	hi = min(hi, o.size)
	o.lastEnd, o.ahead = hi, hi-g.lo
	return hi
}

// start registers a fetch of lo..hi. Callers hold o.mu.
func (o *object) start(lo, hi int64) *flight {
	f := &flight{lo: lo, hi: hi, done: make(chan struct{})}
	o.inflight = append(o.inflight, f)
	return f
}

// fetchAll fetches the flights, parallel at a time, and returns the first
// error.
func (o *object) fetchAll(fs []*flight, keep bool) error {
	if len(fs) > 0 {
		o.mu.Lock()
		o.rounds++
		o.mu.Unlock()
	}
	errs := make([]error, len(fs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[i] = o.fetch(f, keep)
			<-sem
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// fetch gets a flight's range in one ranged GET and keeps it: in memory,
// and on disk when keep and there is a cache.
func (o *object) fetch(f *flight, keep bool) error {
	defer func() {
		o.mu.Lock()
		o.inflight = slices.DeleteFunc(o.inflight, func(g *flight) bool { return g == f })
		o.mu.Unlock()
		close(f.done)
	}()
	o.mu.Lock()
	if time.Now().Before(o.downUntil) {
		err := o.downErr
		o.mu.Unlock()
		return err
	}
	o.gets++
	o.mu.Unlock()
	buf, err := o.get(f.lo, f.hi)
	if err != nil {
		o.mu.Lock()
		o.downErr, o.downUntil = err, time.Now().Add(downFor)
		o.mu.Unlock()
		return err
	}
	s := &span{lo: f.lo, hi: f.hi, data: buf}
	if keep && o.dir != "" {
		// A range that does not reach the disk is fetched again next time.
		// Its file is written whole (a temporary file renamed), and named
		// with its CRC, checked when it is read back.
		name := spanName(f.lo, f.hi, buf)
		if sidecar.WriteFile(filepath.Join(o.dir, name), buf) == nil {
			s.file = name
		}
	}
	o.mu.Lock()
	o.add(s)
	o.mu.Unlock()
	return nil
}

// downFor is how long a failed GET fails the object's reads at once.
const downFor = 5 * time.Second

// get is one ranged GET of lo..hi.
func (o *object) get(lo, hi int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(o.ctx, readTimeout(hi-lo))
	defer cancel()
	r, err := o.s.b.NewRangeReader(ctx, o.key, lo, hi-lo)
	if err != nil {
		return nil, o.s.wrap(o.key, err)
	}
	defer r.Close()
	buf := make([]byte, hi-lo)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, o.s.wrap(o.key, fmt.Errorf("ranged read of %d bytes at %d: %w", len(buf), lo, err))
	}
	return buf, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// add puts s among the spans, in order of start (trim). Callers hold o.mu.
func (o *object) add(s *span) {
	o.tick++
	s.used = o.tick
	i, _ := slices.BinarySearchFunc(o.spans, s.lo, func(a *span, lo int64) int { return cmp.Compare(a.lo, lo) })
	o.spans = slices.Insert(o.spans, i, s)
	if s.data != nil {
		o.mem += int64(len(s.data))
	}
	o.trim(s)
}

// trim lets go of the bytes of the spans least recently used (never s's)
// while more than maxMem are in memory: those on disk stay listed, the
// others are forgotten. Callers hold o.mu, and iterate no spans.
func (o *object) trim(s *span) {
	for o.mem > maxMem {
		var old *span
		for _, c := range o.spans {
			if c.data != nil && c != s && (old == nil || c.used < old.used) {
				old = c
			}
		}
		if old == nil {
			break
		}
		o.mem -= int64(len(old.data))
		old.data = nil
		if old.file == "" {
			o.spans = slices.DeleteFunc(o.spans, func(c *span) bool { return c == old })
		}
	}
}

// copyOut copies lo..lo+len(p), which spans hold, into p: from memory, or
// read back from disk (checked against its CRC; a span that does not
// check is dropped, its file removed, and the error says to fetch again).
// Callers hold o.mu.
func (o *object) copyOut(p []byte, lo int64) error {
	hi := lo + int64(len(p))
	at := lo
	for _, s := range o.spans {
		if at >= hi {
			break
		}
		if s.hi <= at || s.lo > at {
			continue
		}
		if s.data == nil {
			b, err := os.ReadFile(filepath.Join(o.dir, s.file))
			if err != nil || int64(len(b)) != s.hi-s.lo || fmt.Sprintf("%08x", crc32.Checksum(b, castagnoli)) != s.file[strings.LastIndexByte(s.file, '-')+1:] {
				os.Remove(filepath.Join(o.dir, s.file))
				o.spans = slices.DeleteFunc(o.spans, func(c *span) bool { return c == s })
				return fmt.Errorf("%s: cached range %s does not read back", o.key, s.file)
			}
			s.data = b
			o.mem += int64(len(b)) // trimmed once the copy is done
		}
		o.tick++
		s.used = o.tick
		n := copy(p[at-lo:], s.data[at-s.lo:min(s.hi, hi)-s.lo])
		at += int64(n)
	}
	if at < hi {
		return fmt.Errorf("%s: bytes %d to %d are not at hand", o.key, at, hi)
	}
	return nil
}

// loadSpans lists the ranges of the object already on disk (files named
// LO-HI-CRC; anything else there is left alone).
func (o *object) loadSpans() {
	ents, err := os.ReadDir(o.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		var lo, hi int64
		var crc uint32
		if n, _ := fmt.Sscanf(e.Name(), "%d-%d-%08x", &lo, &hi, &crc); n != 3 || lo < 0 || hi <= lo || hi > o.size {
			continue
		}
		o.spans = append(o.spans, &span{lo: lo, hi: hi, file: e.Name()})
	}
	slices.SortFunc(o.spans, func(a, b *span) int { return cmp.Compare(a.lo, b.lo) })
}

// CachedBlob is what is kept under address h in the cache of blobs, nil
// if nothing is (tapefmt decodes it and checks it against h).
func (o *object) CachedBlob(h tapefmt.Hash) []byte {
	if o.blobs == "" {
		return nil
	}
	b, err := os.ReadFile(o.blobPath(h))
	if err != nil {
		return nil
	}
	return b
}

// KeepBlob keeps a whole blob under its address, in its stored form
// (written whole, once).
func (o *object) KeepBlob(h tapefmt.Hash, b []byte) {
	if o.blobs == "" {
		return
	}
	p := o.blobPath(h)
	if st, err := os.Stat(p); err == nil && st.Size() == int64(len(b)) {
		return
	}
	_ = sidecar.WriteFile(p, b) // one not kept is fetched again
}

// KeepRange writes the bytes of r, which spans in memory hold, to the
// object's cache folder as a span of their own (a delta blob's record,
// fetched with bytes that are not kept).
func (o *object) KeepRange(r tapefmt.Range) {
	if o.dir == "" || r.Len <= 0 {
		return
	}
	lo, hi := max(r.Off, 0), min(r.Off+r.Len, o.size)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.file != "" && s.lo <= lo && hi <= s.hi {
			return // on disk already
		}
	}
	buf := make([]byte, hi-lo)
	if o.copyOut(buf, lo) != nil {
		return
	}
	name := spanName(lo, hi, buf)
	if sidecar.WriteFile(filepath.Join(o.dir, name), buf) == nil {
		o.add(&span{lo: lo, hi: hi, file: name})
	}
}

// spanName is the file name of a span kept on disk: LO-HI-CRC.
func spanName(lo, hi int64, b []byte) string {
	return fmt.Sprintf("%d-%d-%08x", lo, hi, crc32.Checksum(b, castagnoli))
}

// blobPath is where the blob with address h is kept: blobs/ab/abcd….
func (o *object) blobPath(h tapefmt.Hash) string {
	x := h.String()
	return filepath.Join(o.blobs, x[:2], x)
}

// SidecarFile reads a file of the tape's sidecar folder from the store,
// where an upload put it beside the tape (KEY.d/NAME); one the store does
// not hold wraps fs.ErrNotExist (sidecar.Read).
func (o *object) SidecarFile(name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(o.ctx, requestTimeout)
	defer cancel()
	b, err := o.s.b.ReadAll(ctx, sidecarPrefix(o.key)+name)
	if codeOf(err) == codeNotFound {
		return nil, fmt.Errorf("%s: %w", o.s.Loc.TapeURL(sidecarPrefix(o.key)+name), fs.ErrNotExist)
	}
	if err != nil {
		return nil, o.s.wrap(sidecarPrefix(o.key)+name, err)
	}
	return b, nil
}

var _ sidecar.Remote = (*object)(nil)
