package tapestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The cache of tapes read from stores (CacheDir) holds:
//
//   - objects/SHA256/NAME: tapes fetched whole (replay, fork, pack,
//     verify), under the SHA-256 of their bytes, each verified before it
//     was kept; refs/ maps a store's key (with the object's size and
//     ETag) to the bytes it held when fetched;
//   - tapes/ and blobs/: the ranges and blobs the readers fetch (remote.go).
//
// It is bounded: when it holds more than CacheMax bytes, the files least
// recently used go first (a file's modification time is its last use).

// DefaultCacheMax is the cache's bound when JUKEBOX_CACHE_MAX is not set.
const DefaultCacheMax = 4 << 30

// CacheMax is the cache's bound in bytes: JUKEBOX_CACHE_MAX (a number of
// bytes, or with K, M, G or T, powers of 1024), else DefaultCacheMax.
func CacheMax() (int64, error) {
	v := os.Getenv("JUKEBOX_CACHE_MAX")
	if v == "" {
		return DefaultCacheMax, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("JUKEBOX_CACHE_MAX=%q: %w", v, err)
	}
	return n, nil
}

// ParseSize reads a size in bytes: 1073741824, 500M, 4G, 1.5T (K, M, G, T
// are powers of 1024; a trailing B or iB is allowed).
func ParseSize(v string) (int64, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	mult := int64(1)
	if s != "" {
		if i := strings.IndexByte("KMGT", s[len(s)-1]); i >= 0 {
			mult = int64(1) << (10 * (i + 1))
			s = s[:len(s)-1]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("not a size (such as 4G, 500M or a number of bytes)")
	}
	return int64(f * float64(mult)), nil
}

// CacheInfo is what the cache holds.
type CacheInfo struct {
	Dir     string `json:"dir"`
	Bytes   int64  `json:"bytes"`
	Files   int    `json:"files"`
	Tapes   int    `json:"tapes"` // tapes fetched whole (objects/)
	Max     int64  `json:"max_bytes"`
	Removed int    `json:"removed,omitempty"` // files a prune removed
	Freed   int64  `json:"freed_bytes,omitempty"`
}

type cachedFile struct {
	path string
	size int64
	used time.Time
}

func cacheFiles(dir string) ([]cachedFile, error) {
	var out []cachedFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		st, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		out = append(out, cachedFile{p, st.Size(), st.ModTime()})
		return nil
	})
	return out, err
}

// Info says what the cache holds.
func Info() (*CacheInfo, error) {
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	max, err := CacheMax()
	if err != nil {
		return nil, err
	}
	files, err := cacheFiles(dir)
	if err != nil {
		return nil, err
	}
	ci := &CacheInfo{Dir: dir, Max: max, Files: len(files)}
	for _, f := range files {
		ci.Bytes += f.size
		if rel, err := filepath.Rel(dir, f.path); err == nil && strings.HasPrefix(rel, "objects"+string(filepath.Separator)) && strings.HasSuffix(f.path, TapeExt) {
			ci.Tapes++
		}
	}
	return ci, nil
}

var pruneMu sync.Mutex

// Prune removes the files least recently used until the cache holds at
// most max bytes (0 empties it), and says what is left and what went.
func Prune(max int64) (*CacheInfo, error) {
	pruneMu.Lock()
	defer pruneMu.Unlock()
	dir, err := CacheDir()
	if err != nil {
		return nil, err
	}
	files, err := cacheFiles(dir)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, f := range files {
		total += f.size
	}
	slices.SortFunc(files, func(a, b cachedFile) int { return a.used.Compare(b.used) })
	removed, freed := 0, int64(0)
	for _, f := range files {
		if total <= max {
			break
		}
		if err := os.Remove(f.path); err == nil || os.IsNotExist(err) {
			total -= f.size
			freed += f.size
			removed++
			removeEmptyDirs(dir, filepath.Dir(f.path))
		}
	}
	ci, err := Info()
	if err != nil {
		return nil, err
	}
	ci.Removed, ci.Freed = removed, freed
	return ci, nil
}

// removeEmptyDirs removes dir and its parents up to (not) root while empty.
func removeEmptyDirs(root, dir string) {
	for dir != root && strings.HasPrefix(dir, root) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}

// trimCache keeps the cache within CacheMax (after a write to it);
// failures are left (the cache is only a cache).
func trimCache() {
	max, err := CacheMax()
	if err != nil {
		max = DefaultCacheMax // jukebox cache info says what is wrong with it
	}
	Prune(max)
}

// touch marks a cached file used now.
func touch(path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
}

// ref is what a store's key held when its tape was fetched whole.
type ref struct {
	Size   int64  `json:"size"`
	ETag   string `json:"etag"`
	SHA256 string `json:"sha256"`
	Name   string `json:"name"`
}

func refPath(base string, loc Location) string {
	sum := sha256.Sum256([]byte(loc.bucket + "\x00" + loc.Prefix + "\x00" + loc.Name))
	return filepath.Join(base, "refs", hex.EncodeToString(sum[:16])+".json")
}

func readRef(base string, loc Location) (ref, bool) {
	var r ref
	b, err := os.ReadFile(refPath(base, loc))
	if err != nil || json.Unmarshal(b, &r) != nil || r.SHA256 == "" {
		return r, false
	}
	return r, true
}

func writeRef(base string, loc Location, r ref) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p := refPath(base, loc)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// objectPath is where a tape of these bytes is kept, under name.
func objectPath(base, sum, name string) string {
	return filepath.Join(base, "objects", sum, filepath.Base(name))
}
