package tapestore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Store is an open store.
type Store struct {
	Loc Location
	b   *bucket
	// maxEntries, when set, bounds a read of the index in place of
	// maxIndexEntries (a test's).
	maxEntries int64
}

// Open opens the store at loc (a tape's location opens its store). It
// reaches nothing yet: Check does.
func Open(ctx context.Context, loc Location) (*Store, error) {
	b, err := openBucket(ctx, loc.bucket, loc.Prefix)
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", loc, err)
	}
	return &Store{Loc: loc.Store(), b: b}, nil
}

// Close releases the store.
func (s *Store) Close() error { return s.b.Close() }

// Check reaches the store and lists one key: wrong credentials, a missing
// bucket or a store that is down are said here, before a run.
func (s *Store) Check(ctx context.Context) error {
	it := s.b.List("", "")
	ctx, cancel := context.WithTimeoutCause(ctx, requestTimeout, &StallError{What: "LIST " + s.Loc.String(), After: requestTimeout})
	defer cancel()
	if _, err := it.Next(ctx); err != nil && !errors.Is(err, io.EOF) {
		err = stalled(ctx, err)
		return s.wrap("", err)
	}
	return nil
}

// wrap says which store (and key) an error is about, in words for the
// common cases.
func (s *Store) wrap(key string, err error) error {
	where := s.Loc.String()
	if key != "" {
		where = s.Loc.TapeURL(key)
	}
	switch {
	case Refused(err):
		return fmt.Errorf("store %s: access refused (check the credentials in the environment): %w", where, err)
	case codeOf(err) == codeNotFound:
		return fmt.Errorf("store %s: not found: %w", where, err)
	}
	return fmt.Errorf("store %s: %w", where, err)
}

// tapeErr is err of asking the store for the tape under key, wrapped:
// when there is none, with the keys a tape of that name was uploaded
// under (uploadedAs).
func (s *Store) tapeErr(ctx context.Context, key string, err error) error {
	err = s.wrap(key, err)
	if codeOf(err) == codeNotFound {
		err = s.uploadedAs(ctx, key, err)
	}
	return err
}

// uploadedAs adds to err (name is not in the store) the keys a tape of
// that name was uploaded under (KeyFor adds its id: push's run.jbx is
// run-3d3fcc001687.jbx), so that the URL a user tries after a push leads
// to the one to give.
func (s *Store) uploadedAs(ctx context.Context, name string, err error) error {
	stem := strings.TrimSuffix(name, TapeExt) + "-"
	var keys []string
	it := s.b.List(stem, "/")
	for len(keys) < 5 {
		o, lerr := next(ctx, "LIST "+s.Loc.String(), it)
		if lerr != nil {
			break
		}
		if rest, ok := strings.CutPrefix(o.Key, stem); ok && !o.IsDir && len(rest) == 12+len(TapeExt) && strings.HasSuffix(rest, TapeExt) {
			keys = append(keys, s.Loc.TapeURL(o.Key))
		}
	}
	if len(keys) == 0 {
		return err
	}
	return fmt.Errorf("%w; push keeps a tape under its name and id: %s", err, strings.Join(keys, ", "))
}

// KeyFor is the key a tape is uploaded under: its local name with the
// first 12 hex digits of its tape id, so that tapes of the same name from
// many machines never share a key (a name that holds them already is kept).
// Control characters and bytes that are not UTF-8 become "-": a key is
// printed, and pulled as a file name (tapeKey refuses them).
func KeyFor(localName string, id [16]byte) string {
	stem := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '-'
		}
		return r
	}, strings.TrimSuffix(localName, TapeExt))
	tag := hex.EncodeToString(id[:6])
	if strings.HasSuffix(stem, "-"+tag) {
		return stem + TapeExt
	}
	return stem + "-" + tag + TapeExt
}

// summaryKey is the key of a tape's summary object.
func summaryKey(key string) string { return key + ".summary.json" }

// sidecarPrefix is where a tape's sidecar files go.
func sidecarPrefix(key string) string { return sidecar.Dir(key) + "/" }

// remote is an object read by ranged GETs, as an io.ReaderAt.
type remote struct {
	ctx context.Context
	b   *bucket
	key string
}

func (r remote) ReadAt(p []byte, off int64) (int, error) {
	ctx, cancel := context.WithTimeout(r.ctx, readTimeout(int64(len(p))))
	defer cancel()
	rd, err := r.b.NewRangeReader(ctx, r.key, off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	n, err := io.ReadFull(rd, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = io.EOF
	}
	return n, err
}

// openRemote opens the tape under key by ranged reads of its header,
// footer and index. A tape without a footer (half uploaded, or torn before
// the upload) or an object that is not a tape is an error that says so.
func (s *Store) openRemote(ctx context.Context, key string) (*tapefmt.Tape, int64, error) {
	a, err := try(ctx, "HEAD "+s.Loc.TapeURL(key), requestTimeout, func(ctx context.Context) (attributes, error) { return s.b.Attributes(ctx, key) })
	if err != nil {
		return nil, 0, s.tapeErr(ctx, key, err)
	}
	t, err := tapefmt.NewReader(remote{ctx, s.b, key}, a.Size)
	if err != nil {
		return nil, a.Size, fmt.Errorf("%s: not a tape: %w", s.Loc.TapeURL(key), err)
	}
	if t.Recovered() != nil {
		return nil, a.Size, fmt.Errorf("%s: not a whole tape (no footer): half uploaded, or torn before it was uploaded", s.Loc.TapeURL(key))
	}
	return t, a.Size, nil
}
