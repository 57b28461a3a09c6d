package tapestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gocloud.dev/blob"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// Pulled says how a download went.
type Pulled struct {
	URL     string `json:"url"`
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Head    string `json:"head"`
	Already bool   `json:"already"` // the file was there with this tape
}

// Download fetches the tape under key into dir as dir/KEY, with its
// sidecar folder, and verifies it whole (jukebox verify's check). A file
// of that name that holds this tape is kept as it is; one that holds
// anything else is never overwritten.
func (s *Store) Download(ctx context.Context, key, dir string, progress func(done, total int64)) (*Pulled, error) {
	rt, size, err := s.openRemote(ctx, key)
	if err != nil {
		return nil, err
	}
	head := rt.Head().String()
	rt.Close()
	p := &Pulled{URL: s.Loc.TapeURL(key), Path: filepath.Join(dir, filepath.Base(key)), Size: size, Head: head}
	if t, err := tapefmt.Open(p.Path); err == nil {
		same := t.Head().String() == head
		t.Close()
		if !same {
			return nil, fmt.Errorf("%s exists and holds another tape: not overwritten (pull into another folder with -o)", p.Path)
		}
		p.Already = true
		return p, s.fetchSidecar(ctx, key, p.Path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s exists and is not a tape: not overwritten", p.Path)
	}
	if err := s.fetch(ctx, key, p.Path, size, progress); err != nil {
		return nil, err
	}
	t, err := tapefmt.Open(p.Path)
	if err == nil {
		_, err = t.Verify(tapefmt.VerifyOptions{Blobs: true})
		t.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("downloaded %s to %s, and it does not verify: %w", p.URL, p.Path, err)
	}
	return p, s.fetchSidecar(ctx, key, p.Path)
}

// fetch downloads key to path through a temporary file beside it, renamed
// into place once whole and of the size listed (never over a file).
func (s *Store) fetch(ctx context.Context, key, path string, size int64, progress func(done, total int64)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	r, err := s.b.NewReader(ctx, key, nil)
	if err != nil {
		tmp.Close()
		return s.wrap(key, err)
	}
	var src io.Reader = r
	if progress != nil {
		src = &counting{r: r, total: size, fn: progress}
	}
	n, err := io.Copy(tmp, src)
	r.Close()
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return s.wrap(key, err)
	}
	if n != size {
		return fmt.Errorf("%s: %d bytes arrived, %d listed", s.Loc.TapeURL(key), n, size)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w (not overwritten)", path, err)
	}
	return nil
}

// fetchSidecar downloads the tape's sidecar files that the local folder
// lacks (local notes are newer than the store's copy, and stay).
func (s *Store) fetchSidecar(ctx context.Context, key, path string) error {
	it := s.b.List(&blob.ListOptions{Prefix: sidecarPrefix(key)})
	for {
		o, err := it.Next(ctx)
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
		local := filepath.Join(tapefmt.Sidecar(path), name)
		if _, err := os.Stat(local); err == nil {
			continue
		}
		b, err := s.b.ReadAll(ctx, o.Key)
		if err != nil {
			return s.wrap(o.Key, err)
		}
		if err := tapefmt.WriteSidecarFile(local, b); err != nil {
			return err
		}
	}
}

// CacheDir is where tapes opened from a store are kept for reading:
// JUKEBOX_CACHE_DIR, else the user's cache folder.
func CacheDir() (string, error) {
	if d := os.Getenv("JUKEBOX_CACHE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for store tapes (set JUKEBOX_CACHE_DIR): %w", err)
	}
	return filepath.Join(d, "jukebox", "store"), nil
}

// Local is a local copy of the tape the URL names, for a command that
// reads tapes: from the cache when it holds it (a tape under a key never
// changes: uploads never overwrite), else downloaded into it. noCache
// downloads into a fresh temporary folder instead; the caller removes it
// (cleanup).
func Local(ctx context.Context, raw string, noCache bool) (path string, cleanup func(), err error) {
	loc, err := Parse(raw)
	if err != nil {
		return "", nil, err
	}
	if loc.Name == "" {
		return "", nil, fmt.Errorf("%s names a store, not a tape: give NAME.jbx at its end (jukebox ls %s lists them)", raw, raw)
	}
	s, err := Open(ctx, loc)
	if err != nil {
		return "", nil, err
	}
	defer s.Close()
	cleanup = func() {}
	var dir string
	if noCache {
		if dir, err = os.MkdirTemp("", "jukebox-store-"); err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	} else {
		base, err := CacheDir()
		if err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256([]byte(loc.Store().bucket + "\x00" + loc.Prefix))
		dir = filepath.Join(base, hex.EncodeToString(sum[:8]))
	}
	p, err := s.Download(ctx, loc.Name, dir, nil)
	if err != nil {
		cleanup()
		return "", nil, err
	}
	return p.Path, cleanup, nil
}
