package tapestore

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/zstd"
)

// The index of a store (docs/store.md): each upload writes a small record
// object of the tape's entry under indexRecords; once there are
// compactAt of them, the uploader gathers them into one segment object
// under indexSegments (level 0) and deletes them, and fanout segments of
// one level are merged into one of the next. ls then reads a few dozen
// objects, not one per tape. Every step is idempotent: a segment is
// written before what it holds is deleted, two uploaders compacting the
// same records write the same entries twice, and readers keep one entry
// per key (the latest upload).
const (
	indexDir      = ".jukebox/index/"
	indexRecords  = indexDir + "r/"
	indexSegments = indexDir + "s/"
	compactAt     = 64
	fanout        = 8
	// reindexLevel is the level reindex writes at, which merges leave
	// alone.
	reindexLevel = 9
)

// IndexStats counts the requests a read of the index made.
type IndexStats struct {
	Lists    int `json:"lists"`    // LIST pages
	Gets     int `json:"gets"`     // objects read
	Records  int `json:"records"`  // record objects read (uploads not yet compacted)
	Segments int `json:"segments"` // segment objects read
}

// ErrNoIndex: the store holds no index (its tapes were uploaded by a
// jukebox that wrote none, or by another tool): Reindex writes one.
var ErrNoIndex = errors.New("the store has no index")

// ErrBadIndex: an object of the store's index does not read as jukebox
// writes it (damaged, written by something else, or over the bounds a
// reader keeps to): the tapes' summaries can be read instead, and
// Reindex writes the index again.
var ErrBadIndex = errors.New("the store's index does not read")

// badIndex is err as ErrBadIndex, its message unchanged.
type badIndex struct{ err error }

func (e *badIndex) Error() string        { return e.err.Error() }
func (e *badIndex) Unwrap() error        { return e.err }
func (e *badIndex) Is(target error) bool { return target == ErrBadIndex }

// Index lists the tapes of the store from its index, in key order: what
// ls shows, read in a few requests whatever the number of tapes. A store
// without an index is ErrNoIndex (List reads one object per tape).
func (s *Store) Index(ctx context.Context) ([]Entry, IndexStats, error) {
	var st IndexStats
	// An object listed may be gone when read (merged into another by an
	// uploader meanwhile): the read starts again. Records are listed
	// before segments, so that records compacted between the two listings
	// are in a segment listed.
	for i := range relists {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, st, ctx.Err()
			case <-time.After(time.Duration(i) * 5 * time.Millisecond):
			}
		}
		recs, err := s.indexKeys(ctx, indexRecords, &st)
		if err != nil {
			return nil, st, err
		}
		segs, err := s.indexKeys(ctx, indexSegments, &st)
		if err != nil {
			return nil, st, err
		}
		if len(recs)+len(segs) == 0 {
			return nil, st, ErrNoIndex
		}
		entries, gone, err := s.readIndex(ctx, recs, segs, &st)
		if err != nil {
			return nil, st, err
		}
		if !gone {
			return entries, st, nil
		}
	}
	return nil, st, fmt.Errorf("store %s: the index kept changing while it was read; try again", s.Loc)
}

// indexKeys lists the keys under prefix. A listing that meets an object
// deleted while it ran (a folder store lists by reading the folder, and
// an uploader compacting deletes records one by one) is listed again.
func (s *Store) indexKeys(ctx context.Context, prefix string, st *IndexStats) ([]string, error) {
	for i := 1; ; i++ {
		keys, err := s.listKeys(ctx, prefix, st)
		if codeOf(err) != codeNotFound || i == relists {
			return keys, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(i) * 5 * time.Millisecond):
		}
	}
}

// relists bounds the listings of a prefix that meet deleted objects.
const relists = 20

func (s *Store) listKeys(ctx context.Context, prefix string, st *IndexStats) ([]string, error) {
	var keys []string
	it := s.b.List(prefix, "")
	st.Lists++
	for n := 0; ; n++ {
		o, err := next(ctx, "LIST "+s.Loc.TapeURL(prefix), it)
		if errors.Is(err, io.EOF) {
			return keys, nil
		}
		if err != nil {
			return nil, s.wrap(prefix, err)
		}
		if n > 0 && n%1000 == 0 {
			st.Lists++ // a page is 1,000 keys
		}
		if !o.IsDir {
			keys = append(keys, o.Key)
		}
	}
}

// readIndex reads the records and segments side by side and keeps one
// entry per tape; gone says an object listed was not there any more.
func (s *Store) readIndex(ctx context.Context, recs, segs []string, st *IndexStats) ([]Entry, bool, error) {
	keys := slices.Concat(segs, recs)
	got := make([][]Entry, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	jobs := make(chan int)
	var budget atomic.Int64 // entries left to read, over every object
	budget.Store(s.indexEntries())
	for range min(listWorkers, len(keys)) {
		wg.Go(func() {
			for i := range jobs {
				got[i], errs[i] = s.readIndexObject(ctx, keys[i], &budget)
			}
		})
	}
	for i := range keys {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	st.Gets += len(keys)
	st.Records += len(recs)
	st.Segments += len(segs)
	gone := false
	for i, err := range errs {
		switch {
		case codeOf(err) == codeNotFound:
			gone = true
		case errors.Is(err, ErrBadIndex) || codeOf(err) == codeInvalid:
			return nil, false, &badIndex{fmt.Errorf("store %s: the index object %s does not read: %w", s.Loc, keys[i], err)}
		case err != nil:
			return nil, false, fmt.Errorf("store %s: the index object %s does not read: %w", s.Loc, keys[i], err)
		}
	}
	return s.latest(slices.Concat(got...)), gone, nil
}

// readIndexObject reads one record (an entry as JSON) or segment (entries
// as JSON lines, zstd), each entry taken from budget; an object that
// does not read as one is ErrBadIndex.
func (s *Store) readIndexObject(ctx context.Context, key string, budget *atomic.Int64) ([]Entry, error) {
	b, err := readAll(ctx, "GET "+s.Loc.TapeURL(key), s.b, key)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(key, indexRecords) {
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, &badIndex{err}
		}
		if budget.Add(-1) < 0 {
			return nil, &badIndex{errTooManyEntries}
		}
		return []Entry{e}, nil
	}
	entries, err := decodeSegment(b, budget)
	if err != nil {
		return nil, &badIndex{err}
	}
	return entries, nil
}

// latest keeps one entry per key, the latest upload's, in key order,
// with its URL in this store.
func (s *Store) latest(all []Entry) []Entry {
	slices.SortStableFunc(all, func(a, b Entry) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return b.uploaded().Compare(a.uploaded()) // latest first
	})
	all = slices.CompactFunc(all, func(a, b Entry) bool { return a.Key == b.Key })
	// A key an upload could not have written (a hostile or broken index)
	// is left out: what ls and the fork list show are tapes of this store.
	all = slices.DeleteFunc(all, func(e Entry) bool { return !tapeKey(e.Key) })
	for i := range all {
		all[i].URL = s.Loc.TapeURL(all[i].Key)
	}
	return all
}

// uploaded is when the entry's tape was uploaded, else last modified.
func (e Entry) uploaded() time.Time {
	if e.Record != nil {
		return e.Record.Uploaded
	}
	return e.Modified
}

// indexUpload writes the index record of an upload, then compacts the
// index when records have gathered. An error writing the record is the
// caller's to report (the tape is up either way); compacting is left to
// the next upload when it fails (the index reads the same, in more
// requests).
func (s *Store) indexUpload(ctx context.Context, up *Uploaded) error {
	e := Entry{Key: up.Key, Size: up.Size, Modified: up.Uploaded, Record: &up.Record}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := fmt.Sprintf("%s%020d-%s.json", indexRecords, time.Now().UnixNano(), up.Key)
	if err := s.Put(ctx, key, b, "application/json"); err != nil {
		return err
	}
	s.compact(ctx)
	return nil
}

// Put writes a small object under key (a table file, an index record),
// with the same deadline and retries as every request.
func (s *Store) Put(ctx context.Context, key string, b []byte, contentType string) error {
	_, err := try(ctx, "PUT "+s.Loc.TapeURL(key), requestTimeout, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, s.b.WriteAll(ctx, key, b, writerOptions{ContentType: contentType})
	})
	if err != nil {
		return s.wrap(key, err)
	}
	return nil
}

// compact gathers the records into a segment once there are compactAt of
// them, and merges fanout segments of a level into one of the next.
func (s *Store) compact(ctx context.Context) error {
	var st IndexStats
	recs, err := s.indexKeys(ctx, indexRecords, &st)
	if err != nil || len(recs) < compactAt {
		return err
	}
	if err := s.merge(ctx, recs, 0); err != nil {
		return err
	}
	for level := range reindexLevel - 1 {
		segs, err := s.indexKeys(ctx, fmt.Sprintf("%s%d-", indexSegments, level), &st)
		if err != nil || len(segs) < fanout {
			return err
		}
		if err := s.merge(ctx, segs, level+1); err != nil {
			return err
		}
	}
	return nil
}

// merge writes the entries of the index objects keys as one segment of
// level, then deletes them. Objects gone meanwhile were merged by another
// uploader: their entries are in its segment.
func (s *Store) merge(ctx context.Context, keys []string, level int) error {
	var all []Entry
	var read []string
	var budget atomic.Int64
	budget.Store(s.indexEntries())
	for _, k := range keys {
		es, err := s.readIndexObject(ctx, k, &budget)
		switch {
		case codeOf(err) == codeNotFound:
			continue
		case err != nil:
			return s.wrap(k, err)
		}
		all, read = append(all, es...), append(read, k)
	}
	if len(read) == 0 {
		return nil
	}
	if err := s.writeSegment(ctx, s.latest(all), level); err != nil {
		return err
	}
	return s.deleteIndex(ctx, read)
}

// deleteIndex deletes index objects; one already gone is no error.
func (s *Store) deleteIndex(ctx context.Context, keys []string) error {
	for _, k := range keys {
		_, err := try(ctx, "DELETE "+s.Loc.TapeURL(k), requestTimeout, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.b.Delete(ctx, k)
		})
		if err != nil && codeOf(err) != codeNotFound {
			return s.wrap(k, err)
		}
	}
	return nil
}

// writeSegment writes entries as a segment of level.
func (s *Store) writeSegment(ctx context.Context, entries []Entry, level int) error {
	b, err := encodeSegment(entries)
	if err != nil {
		return err
	}
	var r [4]byte
	rand.Read(r[:])
	key := fmt.Sprintf("%s%d-%020d-%s.jsonl.zst", indexSegments, level, time.Now().UnixNano(), hex.EncodeToString(r[:]))
	return s.Put(ctx, key, b, "application/zstd")
}

// Reindex writes the index of the store from a listing of every tape and
// its summary object (List): for a store whose tapes were uploaded by a
// jukebox that wrote no index, or by another tool. It returns the tapes
// indexed. The index objects there before are replaced.
func (s *Store) Reindex(ctx context.Context) (int, error) {
	var st IndexStats
	recs, err := s.indexKeys(ctx, indexRecords, &st)
	if err != nil {
		return 0, err
	}
	segs, err := s.indexKeys(ctx, indexSegments, &st)
	if err != nil {
		return 0, err
	}
	entries, err := s.List(ctx)
	if err != nil {
		return 0, err
	}
	if err := s.WriteIndex(ctx, entries); err != nil {
		return 0, err
	}
	return len(entries), s.deleteIndex(ctx, slices.Concat(recs, segs))
}

// WriteIndex adds entries to the index as one segment (Reindex; the
// store's benchmark writes a big index with it).
func (s *Store) WriteIndex(ctx context.Context, entries []Entry) error {
	return s.writeSegment(ctx, s.latest(slices.Clone(entries)), reindexLevel)
}

// maxSegment bounds what a segment decodes to, and maxIndexEntries the
// entries a read of the index takes from all its objects: a store's index
// damaged or written by something else (a few kilobytes of zstd decode to
// gigabytes of one short line) is refused, not held in memory. A million
// tapes and more are listed from their summaries (ls --full).
const (
	maxSegment      = 1 << 30
	maxIndexEntries = 1 << 20
)

var errTooManyEntries = errors.New("the index holds more entries than a reader of it keeps")

// indexEntries is maxIndexEntries, or the store's own bound (a test's).
func (s *Store) indexEntries() int64 { return cmp.Or(s.maxEntries, maxIndexEntries) }

// encodeSegment is entries as JSON lines, zstd-compressed, URLs left out
// (a reader puts its own store's).
func encodeSegment(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, err
	}
	enc := json.NewEncoder(zw)
	for _, e := range entries {
		e.URL = ""
		if err := enc.Encode(e); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeSegment reads a segment's entries, each taken from budget, and
// at most maxSegment bytes of it decoded.
func decodeSegment(b []byte, budget *atomic.Int64) ([]Entry, error) {
	zr, err := zstd.NewReader(bytes.NewReader(b), zstd.WithDecoderMaxMemory(maxSegment), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var out []Entry
	lr := &io.LimitedReader{R: zr, N: maxSegment + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		if lr.N == 0 {
			return nil, fmt.Errorf("a segment decodes to over %d MiB", maxSegment>>20)
		}
		if budget.Add(-1) < 0 {
			return nil, errTooManyEntries
		}
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("segment line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	if lr.N == 0 {
		return nil, fmt.Errorf("a segment decodes to over %d MiB", maxSegment>>20)
	}
	return out, sc.Err()
}

// tapeKey reports whether key names a tape at the top of a store, as
// uploads write them: NAME.jbx, no folder.
//
// Nor does an upload write a key with a control character or bytes that
// are not UTF-8 (KeyFor): such a key, from another writer or a hostile
// store, would become a file name here (pull) that a terminal acts on
// when printed.
func tapeKey(key string) bool {
	return strings.HasSuffix(key, TapeExt) && len(key) > len(TapeExt) && !strings.ContainsAny(key, "/\\") &&
		utf8.ValidString(key) && !strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Folders lists the folders of the store (prefixes ending in "/" one level
// down: date partitions and the like), leaving out jukebox's own (the
// index, the tapes' sidecar folders).
func (s *Store) Folders(ctx context.Context) ([]string, error) {
	var dirs []string
	it := s.b.List("", "/")
	for {
		o, err := next(ctx, "LIST "+s.Loc.String(), it)
		if errors.Is(err, io.EOF) {
			return dirs, nil
		}
		if err != nil {
			return nil, s.wrap("", err)
		}
		if o.IsDir && o.Key != ".jukebox/" && !strings.HasSuffix(o.Key, TapeExt+".d/") {
			dirs = append(dirs, o.Key)
		}
	}
}
