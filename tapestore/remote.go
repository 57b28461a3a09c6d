package tapestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// A tape in a store is read where it lies, by ranged GETs of 1 MiB blocks,
// each fetched once into a local cache: opening it reads its header, its
// footer and its index (four round trips, whatever its size), and a frame
// or a blob is fetched when something reads it. Blocks are cached by the
// object's key, size and ETag: an upload never overwrites an object, so a
// block once fetched is never stale.

// blockSize is the unit of ranged reads and of the cache.
const blockSize = 1 << 20

// maxMemBlocks bounds the blocks kept in memory (the disk cache has them
// all; without it, --no-cache, the memory is all there is).
const maxMemBlocks = 64

// readTimeout bounds one ranged GET.
const readTimeout = 2 * time.Minute

// Opener is the tapefmt.RemoteOpener for store URLs: tapefmt.Open then
// reads a tape in a store as it reads a file. noCache keeps fetched
// blocks in memory only.
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
		o, err := openObject(context.Background(), loc, noCache)
		if err != nil {
			return nil, 0, nil, true, err
		}
		return o, o.size, o, true, nil
	}
}

// object is a store's object read by blocks, through the cache.
type object struct {
	s    *Store
	key  string
	size int64
	dir  string // the object's cache folder; "" keeps blocks in memory only

	mu       sync.Mutex
	mem      map[int64][]byte
	inflight map[int64]chan struct{} // blocks being fetched
	gets     int                     // ranged GETs made (for tests and benchmarks)
}

func openObject(ctx context.Context, loc Location, noCache bool) (*object, error) {
	s, err := Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	a, err := s.b.Attributes(ctx, loc.Name)
	if err != nil {
		s.Close()
		return nil, s.wrap(loc.Name, err)
	}
	o := &object{s: s, key: loc.Name, size: a.Size, mem: map[int64][]byte{}, inflight: map[int64]chan struct{}{}}
	if !noCache {
		base, err := CacheDir()
		if err != nil {
			s.Close()
			return nil, err
		}
		id := sha256.Sum256([]byte(loc.bucket + "\x00" + loc.Prefix + loc.Name + "\x00" + strconv.FormatInt(a.Size, 10) + "\x00" + a.ETag))
		o.dir = filepath.Join(base, "blocks", hex.EncodeToString(id[:12]))
	}
	return o, nil
}

// Close releases the store.
func (o *object) Close() error { return o.s.Close() }

// ReadAt reads p at off: every block it spans, the ones not at hand
// fetched in one ranged GET per run of missing blocks.
func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= o.size {
		return 0, io.EOF
	}
	end := min(off+int64(len(p)), o.size)
	first, last := off/blockSize, (end-1)/blockSize
	if err := o.ensure(first, last); err != nil {
		return 0, err
	}
	n := 0
	for i := first; i <= last; i++ {
		b, err := o.block(i)
		if err != nil {
			return n, err
		}
		lo := max(off, i*blockSize) - i*blockSize
		hi := min(end, (i+1)*blockSize) - i*blockSize
		n += copy(p[n:], b[lo:hi])
	}
	if int64(n) < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

// readAhead is how many blocks a miss fetches at least, forward from the
// block missed (as far as they are missing): a tape is read mostly in
// order, and its first screen (rows whose records lie between the blobs
// of the first steps) then comes in one GET.
const readAhead = 8

// tailBlocks is how many blocks a miss at the last block fetches before
// it too: the index tables end where the footer starts, so opening a tape
// takes them with the footer (an index of up to about 2 MiB, some 60,000
// frames, comes in the same GET).
const tailBlocks = 2

// ensure fetches the blocks first..last that are neither in memory nor on
// disk, a run of them at a time, each run read ahead to readAhead blocks.
func (o *object) ensure(first, last int64) error {
	blocks := (o.size + blockSize - 1) / blockSize
	for i := first; i <= last; {
		if o.have(i) {
			i++
			continue
		}
		j := i
		for j+1 < blocks && (j+1 <= last || j+1 < i+readAhead) && !o.have(j+1) {
			j++
		}
		lo := i
		if j == blocks-1 { // the footer: the index lies just before it
			for lo > 0 && lo > i-tailBlocks && !o.have(lo-1) {
				lo--
			}
		}
		if err := o.fetch(lo, j); err != nil {
			return err
		}
		i = j + 1
	}
	return nil
}

// have reports whether block i is in memory or on disk, waiting for a
// fetch of it in flight.
func (o *object) have(i int64) bool {
	o.mu.Lock()
	wait, busy := o.inflight[i]
	_, inMem := o.mem[i]
	o.mu.Unlock()
	if busy {
		<-wait
		return o.have(i)
	}
	if inMem {
		return true
	}
	if o.dir != "" {
		if st, err := os.Stat(o.blockPath(i)); err == nil && st.Size() == o.blockLen(i) {
			return true
		}
	}
	return false
}

func (o *object) blockPath(i int64) string { return filepath.Join(o.dir, strconv.FormatInt(i, 10)) }

func (o *object) blockLen(i int64) int64 { return min(blockSize, o.size-i*blockSize) }

// fetch gets blocks first..last in one ranged GET and keeps them.
func (o *object) fetch(first, last int64) error {
	done := make(chan struct{})
	o.mu.Lock()
	for i := first; i <= last; i++ {
		o.inflight[i] = done
	}
	o.gets++
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		for i := first; i <= last; i++ {
			delete(o.inflight, i)
		}
		o.mu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	start := first * blockSize
	length := min(o.size, (last+1)*blockSize) - start
	r, err := o.s.b.NewRangeReader(ctx, o.key, start, length, nil)
	if err != nil {
		return o.s.wrap(o.key, err)
	}
	defer r.Close()
	buf := make([]byte, length)
	if _, err := io.ReadFull(r, buf); err != nil {
		return o.s.wrap(o.key, fmt.Errorf("ranged read of %d bytes at %d: %w", length, start, err))
	}
	for i := first; i <= last; i++ {
		lo := (i - first) * blockSize
		b := buf[lo : lo+o.blockLen(i)]
		o.keep(i, b)
	}
	return nil
}

// keep puts block i in memory and, with a cache, on disk.
func (o *object) keep(i int64, b []byte) {
	o.mu.Lock()
	if len(o.mem) >= maxMemBlocks {
		for k := range o.mem { // any one: the disk cache has it
			delete(o.mem, k)
			break
		}
	}
	o.mem[i] = b
	o.mu.Unlock()
	if o.dir != "" {
		// A block that does not reach the disk is fetched again next time.
		// It is written whole (a temporary file renamed), as sidecar files
		// are: a crash never leaves half a block under its name.
		_ = tapefmt.WriteSidecarFile(o.blockPath(i), b)
	}
}

// block is block i, from memory or disk.
func (o *object) block(i int64) ([]byte, error) {
	o.mu.Lock()
	b, ok := o.mem[i]
	o.mu.Unlock()
	if ok {
		return b, nil
	}
	if o.dir != "" {
		b, err := os.ReadFile(o.blockPath(i))
		if err == nil && int64(len(b)) == o.blockLen(i) {
			return b, nil
		}
	}
	if err := o.fetch(i, i); err != nil {
		return nil, err
	}
	return o.block(i)
}
