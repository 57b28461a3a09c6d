package tapestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// Pulled says how a download went.
type Pulled struct {
	URL     string `json:"url"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Head    string `json:"head"`
	Already bool   `json:"already"` // the file was there with this tape
	// NotesError says why the tape's sidecar files (markers, rules) did
	// not all come with it: the tape is here and verified all the same,
	// and a pull again brings them.
	NotesError error `json:"-"`
	// Damage says why a tape kept under --allow-damaged does not verify.
	Damage string `json:"damage,omitempty"`
}

// Download fetches the tape under key into dir as dir/KEY, with its
// sidecar folder, and verifies it whole (jukebox verify's check) before it
// takes that name: a download that does not verify is not kept. A file of
// that name that holds this tape and verifies is kept as it is; one that
// holds anything else, or does not verify, is never overwritten.
func (s *Store) Download(ctx context.Context, key, dir string, progress func(done, total int64)) (*Pulled, error) {
	return s.DownloadDamaged(ctx, key, dir, progress, false)
}

// DownloadDamaged is Download, keeping, when allowDamaged, a tape that
// does not verify (one pushed with --allow-damaged, for its faults to be
// read): Pulled.Damage says why it does not.
func (s *Store) DownloadDamaged(ctx context.Context, key, dir string, progress func(done, total int64), allowDamaged bool) (*Pulled, error) {
	rt, size, err := s.openRemote(ctx, key)
	if err != nil {
		return nil, err
	}
	head := rt.Head().String()
	rt.Close()
	p := &Pulled{URL: s.Loc.TapeURL(key), Path: filepath.Join(dir, filepath.Base(key)), Size: size, Head: head}
	if t, err := tapefmt.Open(p.Path); err == nil {
		same := t.Head().String() == head
		if same {
			_, err = t.Verify(tapefmt.VerifyOptions{Blobs: true})
		}
		t.Close()
		if !same {
			return nil, fmt.Errorf("%s exists and holds another tape: not overwritten (pull into another folder with -o)", p.Path)
		}
		if err != nil && !allowDamaged {
			return nil, fmt.Errorf("%s exists and does not verify (%v): not overwritten; remove it and pull again", p.Path, err)
		}
		if err != nil {
			p.Damage = err.Error()
		}
		p.Already = true
		p.NotesError = s.fetchSidecar(ctx, key, p.Path)
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s exists and is not a tape: not overwritten", p.Path)
	}
	tmp, _, err := s.fetch(ctx, key, filepath.Dir(p.Path), size, progress)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp)
	if err := verifyFile(tmp); err != nil {
		if !allowDamaged {
			return nil, fmt.Errorf("downloaded %s, and it does not verify (not kept; pull --allow-damaged keeps it): %w", p.URL, err)
		}
		p.Damage = err.Error()
	}
	if err := os.Link(tmp, p.Path); err != nil {
		return nil, fmt.Errorf("%s: %w (not overwritten)", p.Path, err)
	}
	p.NotesError = s.fetchSidecar(ctx, key, p.Path)
	return p, nil
}

// verifyFile is jukebox verify's full check of the tape at path.
func verifyFile(path string) error {
	t, err := tapefmt.Open(path)
	if err != nil {
		return err
	}
	defer t.Close()
	if t.Recovered() != nil {
		return tapefmt.ErrNoFooter
	}
	_, err = t.Verify(tapefmt.VerifyOptions{Blobs: true})
	return err
}

// fetch downloads the object under key whole (its bytes of now, one GET
// given up when it stalls) into a temporary file in dir, and returns its
// path and SHA-256; the caller removes or renames it. size, when not -1,
// is the size the object must have.
func (s *Store) fetch(ctx context.Context, key, dir string, size int64, progress func(done, total int64)) (string, string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	type res struct {
		tmp, sum string
	}
	r, err := try(ctx, "GET "+s.Loc.TapeURL(key), 0, func(ctx context.Context) (res, error) { // copyObject watches for stalls
		tmp, err := createTemp(dir, "."+filepath.Base(key)+"-")
		if err != nil {
			return res{}, err
		}
		h := sha256.New()
		n, err := s.copyObject(ctx, key, io.MultiWriter(tmp, h), size, progress)
		if err = errors.Join(err, tmp.Sync(), tmp.Close()); err == nil && size >= 0 && n != size {
			err = fmt.Errorf("%s: %d bytes arrived, %d listed", s.Loc.TapeURL(key), n, size)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return res{}, err
		}
		return res{tmp.Name(), hex.EncodeToString(h.Sum(nil))}, nil
	})
	if err != nil {
		return "", "", s.wrap(key, err)
	}
	return r.tmp, r.sum, nil
}

// fetchSidecar downloads the tape's sidecar files that the local folder
// lacks (local notes are newer than the store's copy, and stay).
func (s *Store) fetchSidecar(ctx context.Context, key, path string) error {
	it := s.b.List(sidecarPrefix(key), "")
	for {
		o, err := next(ctx, "LIST "+s.Loc.TapeURL(sidecarPrefix(key)), it)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return s.wrap(key, err)
		}
		name := strings.TrimPrefix(o.Key, sidecarPrefix(key))
		if o.IsDir || name == "" || strings.ContainsAny(name, "/\\") || name[0] == '.' || name == stateFile {
			continue // only the folder's own files, by a plain name
		}
		local := filepath.Join(sidecar.Dir(path), name)
		if _, err := os.Stat(local); err == nil {
			continue
		}
		b, err := readAll(ctx, "GET "+s.Loc.TapeURL(o.Key), s.b, o.Key)
		if err != nil {
			return s.wrap(o.Key, err)
		}
		if err := sidecar.WriteFile(local, b); err != nil {
			return err
		}
	}
}

// CacheDir is where tapes opened from a store are kept for reading:
// JUKEBOX_CACHE_DIR, else the user's cache folder.
func CacheDir() (string, error) {
	d := os.Getenv("JUKEBOX_CACHE_DIR")
	if d == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache folder for store tapes (set JUKEBOX_CACHE_DIR): %w", err)
		}
		d = filepath.Join(base, "jukebox", "store")
	}
	// Another user's cache fails at its first file, as "permission
	// denied" on the tape's URL, which reads as the store refusing.
	if fi, err := os.Stat(d); err == nil {
		if uid, other := ownedByOther(fi); other {
			return "", fmt.Errorf("the cache folder %s belongs to another user (uid %d): set JUKEBOX_CACHE_DIR to a folder of yours, or give --no-cache", d, uid)
		}
	}
	return d, nil
}

// Local is a local copy of the tape the URL names, verified: from the
// cache when it holds the bytes the key held when last fetched (same size
// and ETag: uploads never overwrite), else fetched whole into it and kept
// there under the SHA-256 of its bytes once it verifies. noCache fetches
// into a fresh temporary folder instead; the caller removes it (cleanup).
// A tape that does not verify is kept nowhere.
func Local(ctx context.Context, raw string, noCache bool) (path string, cleanup func(), err error) {
	f, err := fetchWhole(ctx, raw, noCache, true)
	if err != nil {
		return "", nil, err
	}
	if f.cached {
		return f.Path, func() {}, nil
	}
	if err := verifyFile(f.Path); err != nil {
		f.Drop()
		return "", nil, fmt.Errorf("%s does not verify (nothing kept): %w", f.URL, err)
	}
	path, err = f.Keep()
	if err != nil {
		f.Drop()
		return "", nil, err
	}
	return path, f.cleanup, nil
}

// Fetched is a tape fetched whole from a store, not yet kept: Keep puts it
// in the cache under the SHA-256 of its bytes, Drop removes it.
type Fetched struct {
	URL    string
	Path   string // a temporary file until Keep
	Size   int64
	SHA256 string

	cached  bool // Path is the cache's copy (fetchWhole with reuse)
	noCache bool
	base    string // the cache folder, or the temporary folder with noCache
	loc     Location
	etag    string
	s       *Store
	ctx     context.Context
	cleanup func()
	closed  bool
}

func (f *Fetched) close() {
	if !f.closed {
		f.closed = true
		f.s.Close()
	}
}

// Fetch fetches the tape the URL names whole: the object's bytes of now
// (one GET), whatever the cache holds. The caller checks it, then Keeps or
// Drops it.
func Fetch(ctx context.Context, raw string, noCache bool) (*Fetched, error) {
	return fetchWhole(ctx, raw, noCache, false)
}

func fetchWhole(ctx context.Context, raw string, noCache, reuse bool) (*Fetched, error) {
	loc, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	if loc.Name == "" {
		return nil, fmt.Errorf("%s names a store, not a tape: give NAME.jbx at its end (jukebox ls %s lists them)", raw, raw)
	}
	s, err := Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	f := &Fetched{URL: s.Loc.TapeURL(loc.Name), loc: loc, s: s, ctx: ctx, noCache: noCache, cleanup: func() {}}
	a, err := try(ctx, "HEAD "+f.URL, requestTimeout, func(ctx context.Context) (attributes, error) { return s.b.Attributes(ctx, loc.Name) })
	if err != nil {
		err = s.tapeErr(ctx, loc.Name, err)
		s.Close()
		return nil, err
	}
	f.Size, f.etag = a.Size, a.ETag
	if noCache {
		if f.base, err = os.MkdirTemp("", "jukebox-store-"); err != nil {
			s.Close()
			return nil, err
		}
		f.cleanup = func() { os.RemoveAll(f.base) }
	} else {
		if f.base, err = CacheDir(); err != nil {
			s.Close()
			return nil, err
		}
		if r, ok := readRef(f.base, loc); reuse && ok && r.Size == a.Size && r.ETag == a.ETag && a.ETag != "" {
			p := objectPath(f.base, r.SHA256, loc.Name)
			if st, err := os.Stat(p); err == nil && st.Size() == a.Size {
				touch(p)
				s.Close()
				f.Path, f.SHA256, f.cached = p, r.SHA256, true
				return f, nil
			}
		}
	}
	if r, ok := readRef(f.base, loc); !noCache && !reuse && ok && r.Size == a.Size {
		// Bytes checked before: when the object's bytes of now hash the
		// same, nothing need be written (a different hash is fetched
		// again, into a file, to be checked).
		if _, err := os.Stat(notePath(f.base, r.SHA256)); err == nil {
			sum, n, err := s.hashObject(ctx, loc.Name, a.Size, nil)
			if err == nil && sum == r.SHA256 && n == a.Size {
				f.Path, f.SHA256, f.cached = objectPath(f.base, r.SHA256, loc.Name), sum, true
				return f, nil
			}
		}
	}
	dir := filepath.Join(f.base, "objects")
	if noCache {
		dir = f.base
	}
	f.Path, f.SHA256, err = s.fetch(ctx, loc.Name, dir, a.Size, nil)
	if err != nil {
		f.cleanup()
		s.Close()
		return nil, err
	}
	return f, nil
}

// Keep puts a fetched tape in its place (the cache, under the SHA-256 of
// its bytes; a folder of its own with noCache), with its sidecar files,
// and returns its path.
func (f *Fetched) Keep() (string, error) {
	defer f.close()
	if f.cached {
		if _, err := os.Stat(f.Path); err == nil {
			touch(f.Path)
		}
		touch(notePath(f.base, f.SHA256))
		return f.Path, nil
	}
	p := objectPath(f.base, f.SHA256, f.loc.Name)
	if f.noCache {
		p = filepath.Join(f.base, filepath.Base(f.loc.Name))
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", err
	}
	if st, err := os.Stat(p); err == nil && st.Size() == f.Size {
		os.Remove(f.Path) // these bytes are kept already
		touch(p)
	} else if err := os.Rename(f.Path, p); err != nil {
		return "", err
	}
	f.Path = p
	if !f.noCache {
		writeRef(f.base, f.loc, ref{Size: f.Size, ETag: f.etag, SHA256: f.SHA256, Name: f.loc.Name})
	}
	if err := f.s.fetchSidecar(f.ctx, f.loc.Name, p); err != nil {
		return "", err
	}
	if !f.noCache {
		trimCache()
	}
	return p, nil
}

// Note is what KeepNote kept beside these bytes in the cache (the same
// SHA-256), nil if nothing: verify keeps its report there, so that bytes
// proven the same as bytes that passed need not be checked again.
func (f *Fetched) Note() []byte {
	if f.noCache {
		return nil
	}
	b, err := os.ReadFile(notePath(f.base, f.SHA256))
	if err != nil {
		return nil
	}
	return b
}

// KeepNote keeps b beside these bytes in the cache (after Keep).
func (f *Fetched) KeepNote(b []byte) error {
	if f.noCache {
		return nil
	}
	return sidecar.WriteFile(notePath(f.base, f.SHA256), b)
}

func notePath(base, sum string) string { return filepath.Join(base, "objects", sum, ".verified.json") }

// Drop removes a fetched tape that is not to be kept.
func (f *Fetched) Drop() {
	if !f.cached {
		os.Remove(f.Path)
	}
	f.cleanup()
	f.close()
}

// createTemp creates a new file in dir named prefix and a random suffix,
// with a tape's mode (0644 less the umask, as record makes one): a tape
// pulled was left 0600 by os.CreateTemp, unreadable to the others a
// recorded one is readable to.
func createTemp(dir, prefix string) (*os.File, error) {
	for range 100 {
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("%s: no free name for a temporary file", dir)
}
