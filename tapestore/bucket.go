package tapestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"
)

// What the store needs of object storage, and nothing more: list a
// prefix (by "folder" or flat), an object's size and ETag, ranged reads,
// writes that can refuse to replace an object, deletes. Each scheme is a
// driver (drivers*.go): folders and S3 are this package's own, built on
// the AWS SDK for S3; the native GCS and Azure drivers are gocloud.dev's,
// behind their build tags. gocloud.dev/blob itself links gRPC and the
// OpenTelemetry SDK, which the default binary does without.

// driver is one scheme's access to one bucket (a folder, an S3 bucket).
// Keys are full keys in the bucket; errors carry a code (codedError) where
// the driver knows one.
type driver interface {
	// listPage lists the keys under prefix, from token ("" for the
	// first page); with delim, keys with delim after the prefix are
	// folded into one entry with IsDir set. next is "" after the last
	// page.
	listPage(ctx context.Context, prefix, delim, token string) (objs []listObject, next string, err error)
	attributes(ctx context.Context, key string) (attributes, error)
	// rangeReader reads length bytes at off (length < 0: to the end);
	// size is the whole object's.
	rangeReader(ctx context.Context, key string, off, length int64) (r io.ReadCloser, size int64, err error)
	// writer writes key; the object appears at Close, and not at all
	// when ctx ends first or Close fails.
	writer(ctx context.Context, key string, o writerOptions) (io.WriteCloser, error)
	delete(ctx context.Context, key string) error
	close() error
}

// multipartDriver is a driver whose store keeps the parts of unfinished
// multipart uploads and the checksums it checked at upload (S3).
type multipartDriver interface {
	// abortUploads aborts the unfinished uploads of exactly key begun
	// at a time which accepts, and says how many.
	abortUploads(ctx context.Context, key string, which func(initiated time.Time) bool) (int, error)
	// storedCRC32 is the CRC32 the store keeps of key's object: base64,
	// "-N" after it for N parts; ok is false when it keeps none.
	storedCRC32(ctx context.Context, key string) (sum string, ok bool, err error)
}

// openers open a bucket URL (scheme://bucket?query, file:///folder?query)
// per scheme; the drivers' files add theirs.
var openers = map[string]func(ctx context.Context, u *url.URL) (driver, error){}

// listObject is one entry of a listing.
type listObject struct {
	Key     string
	Size    int64
	ModTime time.Time
	IsDir   bool // a folded "folder" (listed with a delimiter), Key ending in it
}

// attributes is what a HEAD tells of an object.
type attributes struct {
	Size int64
	ETag string // changes when the object does; "" when the store gives none
}

// writerOptions are a write's options.
type writerOptions struct {
	IfNotExist  bool // fail with codeExists when key holds an object
	ContentType string
	Metadata    map[string]string
	PartSize    int64 // multipart uploads' part size; 0 for the driver's
}

// errCode is what kind of failure an error is, as far as the store cares.
type errCode int

const (
	codeUnknown  errCode = iota
	codeNotFound         // no such object or bucket
	codeDenied           // the credentials are refused
	codeExists           // a conditional write met an object
	codeInvalid          // the request cannot succeed as it is
	codeRetried          // the driver's client tried it again and again already
)

// codedError is a driver's error with its code.
type codedError struct {
	code errCode
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// coded is err with code c (nil stays nil).
func coded(c errCode, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{c, err}
}

// codeOf is err's code, codeUnknown when no driver gave one.
func codeOf(err error) errCode {
	var ce *codedError
	if errors.As(err, &ce) {
		return ce.code
	}
	return codeUnknown
}

// Missing says whether err is about a store or a tape that is not there
// (a folder store's folder, a bucket, a key) rather than a store that
// refused, or a URL its driver does not take.
func Missing(err error) bool { return codeOf(err) == codeNotFound }

// Refused says whether err is a store's refusal of the credentials.
func Refused(err error) bool {
	return codeOf(err) == codeDenied || strings.Contains(err.Error(), "StatusCode: 403")
}

// bucket is a driver seen through a key prefix (the store's): keys given
// and listed are relative to it.
type bucket struct {
	d      driver
	prefix string
}

// openBucket opens the bucket of a URL (Location.bucket) below prefix.
func openBucket(ctx context.Context, raw, prefix string) (*bucket, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	open := openers[u.Scheme]
	if open == nil {
		return nil, fmt.Errorf("no driver for %s:// in this binary", u.Scheme)
	}
	d, err := open(ctx, u)
	if err != nil {
		return nil, err
	}
	return &bucket{d: d, prefix: prefix}, nil
}

func (b *bucket) Close() error { return b.d.close() }

// listIterator walks a listing page by page.
type listIterator struct {
	b             *bucket
	prefix, delim string
	page          []listObject
	token         string
	done          bool
	seen          map[string]bool // the pages' tokens: a store that repeats one lists for ever
	listed        int
}

// maxListed bounds the objects one listing yields: a store that never
// says its listing is over (new tokens, the same keys) is refused rather
// than listed until memory runs out.
const maxListed = 4 << 20

// List lists the keys under prefix (relative to the bucket's), folded at
// delim when it is not "".
func (b *bucket) List(prefix, delim string) *listIterator {
	return &listIterator{b: b, prefix: prefix, delim: delim}
}

// Next is the next entry, io.EOF after the last. A failed page is asked
// for again by the next call.
func (it *listIterator) Next(ctx context.Context) (*listObject, error) {
	for len(it.page) == 0 {
		if it.done {
			return nil, io.EOF
		}
		objs, next, err := it.b.d.listPage(ctx, it.b.prefix+it.prefix, it.delim, it.token)
		if err != nil {
			return nil, err
		}
		if next != "" {
			if it.seen == nil {
				it.seen = map[string]bool{}
			}
			if it.seen[next] {
				return nil, coded(codeInvalid, fmt.Errorf("LIST %s: the store gave a page's token again: its listing would not end", it.b.prefix+it.prefix))
			}
			it.seen[next] = true
		}
		if it.listed += len(objs); it.listed > maxListed {
			return nil, coded(codeInvalid, fmt.Errorf("LIST %s: over %d objects: list a folder further down", it.b.prefix+it.prefix, maxListed))
		}
		it.page, it.token, it.done = objs, next, next == ""
	}
	o := it.page[0]
	it.page = it.page[1:]
	o.Key = strings.TrimPrefix(o.Key, it.b.prefix)
	return &o, nil
}

func (b *bucket) Attributes(ctx context.Context, key string) (attributes, error) {
	return b.d.attributes(ctx, b.prefix+key)
}

// Exists reports whether key holds an object.
func (b *bucket) Exists(ctx context.Context, key string) (bool, error) {
	_, err := b.Attributes(ctx, key)
	if codeOf(err) == codeNotFound {
		return false, nil
	}
	return err == nil, err
}

// objectReader reads an object, or a range of it.
type objectReader struct {
	io.ReadCloser
	size int64
}

// Size is the whole object's size.
func (r *objectReader) Size() int64 { return r.size }

func (b *bucket) NewRangeReader(ctx context.Context, key string, off, length int64) (*objectReader, error) {
	r, size, err := b.d.rangeReader(ctx, b.prefix+key, off, length)
	if err != nil {
		return nil, err
	}
	return &objectReader{r, size}, nil
}

func (b *bucket) NewReader(ctx context.Context, key string) (*objectReader, error) {
	return b.NewRangeReader(ctx, key, 0, -1)
}

// maxSmallObject bounds what ReadAll reads: the objects read whole
// (summaries, index records and segments, sidecar files) are kilobytes to
// a few megabytes as jukebox writes them. A store that answers with more,
// or with a body that does not end (damaged, or not what it says), is
// refused rather than held in memory. A variable for tests.
var maxSmallObject int64 = 64 << 20

// ReadAll reads the object at key whole, refusing one over
// maxSmallObject (codeInvalid: not tried again).
func (b *bucket) ReadAll(ctx context.Context, key string) ([]byte, error) {
	r, err := b.NewReader(ctx, key)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	tooLarge := coded(codeInvalid, fmt.Errorf("%s: over %d MiB, more than jukebox writes there (a damaged store, or a server that is not what it says)",
		key, maxSmallObject>>20))
	if r.Size() > maxSmallObject {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(r, maxSmallObject+1))
	if err == nil && int64(len(data)) > maxSmallObject {
		return nil, tooLarge
	}
	return data, err
}

func (b *bucket) NewWriter(ctx context.Context, key string, o writerOptions) (io.WriteCloser, error) {
	return b.d.writer(ctx, b.prefix+key, o)
}

// WriteAll writes p under key; the object appears whole or not at all.
func (b *bucket) WriteAll(ctx context.Context, key string, p []byte, o writerOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := b.NewWriter(ctx, key, o)
	if err != nil {
		return err
	}
	if _, err := w.Write(p); err != nil {
		cancel()
		w.Close()
		return err
	}
	return w.Close()
}

func (b *bucket) Delete(ctx context.Context, key string) error {
	return b.d.delete(ctx, b.prefix+key)
}

// multipart is the driver's multipart access, nil when its store has none.
func (b *bucket) multipart() multipartDriver {
	m, _ := b.d.(multipartDriver)
	return m
}

// sortObjects puts a listing page in key order.
func sortObjects(objs []listObject) {
	slices.SortFunc(objs, func(a, b listObject) int { return strings.Compare(a.Key, b.Key) })
}
