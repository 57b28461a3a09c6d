package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
)

// beginNamesFile holds which names the workspace's folders held when the
// transaction began, for the folders that had not changed since Begin
// when they were read. A path the agent changed that is gone from the
// real side now was deleted by the user during the run exactly when it
// was there then; the names tell that apart from a path that never was
// (a rename's target, a file the agent made) where the folder's own
// change time cannot (the user also worked in that folder).
//
// Layout: a sorted array of little-endian uint64, the FNV-1a hashes of
// each listed folder's path tagged as a folder (dirKey) and of each of
// its entries' paths (nameKey). Paths are slash-separated, relative to
// the workspace, "." for its root.
const beginNamesFile = "begin.names"

// maxBeginNames bounds the names read at Begin (8 MiB of hashes): past
// it the folders not yet read fall back to the overlay's origin marks.
const maxBeginNames = 1 << 20

func nameKey(rel string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(rel))
	return h.Sum64()
}

func dirKey(rel string) uint64 { return nameKey("\x00dir\x00" + rel) }

// beginNames is the set read in the background from Begin on.
type beginNames struct {
	cancel context.CancelFunc
	done   chan struct{}
	keys   []uint64 // sorted; valid once done is closed
	// foreign are entries owned by a user or group other than jukebox's
	// own (read when it is not root, as the read goes): the
	// overlay booth maps only the caller's uid and gid, so the agent can
	// neither change nor rename them there (EOVERFLOW on copy-up).
	foreign foreignOwned
}

// foreignOwned counts the entries a non-root overlay booth cannot copy
// up, keeping the first few paths.
type foreignOwned struct {
	mu    sync.Mutex
	n     int
	paths []string
	uid   int // -1: not looked for (root)
	gid   int
}

// maxForeignPaths bounds the paths kept for the message.
const maxForeignPaths = 10

func (f *foreignOwned) check(e fs.DirEntry, p string) {
	if f.uid < 0 {
		return
	}
	if uid, gid, ok := entryOwner(e); ok && (uid != f.uid || gid != f.gid) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.n++
		if len(f.paths) < maxForeignPaths {
			f.paths = append(f.paths, p)
		}
	}
}

// readBeginNames starts reading the workspace's names in the background.
// Begin stays constant time; whoever needs the names waits (names).
func (tx *Tx) readBeginNames() {
	ctx, cancel := context.WithCancel(context.Background())
	bn := &beginNames{cancel: cancel, done: make(chan struct{})}
	tx.begin = bn
	root, skip, since, out := tx.ws.root, tx.ws.stateRel, tx.meta.BeginCtime, tx.dir
	bn.foreign.uid, bn.foreign.gid = -1, -1
	if os.Geteuid() != 0 {
		bn.foreign.uid, bn.foreign.gid = os.Geteuid(), os.Getegid()
	}
	pinned, pinErr := os.Lstat(out)
	go func() {
		defer close(bn.done)
		keys := walkNames(ctx, root, filepath.ToSlash(skip), since, &bn.foreign)
		slices.Sort(keys)
		// Not through a folder put in the transaction's place meanwhile (a
		// link, by an agent of the same user): checkState refuses the
		// commit then, and nothing is written where it points.
		if now, err := os.Lstat(out); pinErr != nil || err != nil || !os.SameFile(now, pinned) {
			return
		}
		if ctx.Err() == nil && writeNames(filepath.Join(out, beginNamesFile), keys) == nil {
			bn.keys = keys
		}
	}()
}

// walkNames lists every folder under root, breadth first, keeping the
// names of those whose change time was not after since once read. It
// reads a folder 256 entries at a time, unsorted, so that a cancel (a
// run that ended at once, rolled back) ends it within one batch. It
// counts the entries foreign owns, when it looks for them.
func walkNames(ctx context.Context, root, skip string, since int64, foreign *foreignOwned) []uint64 {
	var keys []uint64
	queue := []string{"."}
	for len(queue) > 0 && len(keys) < maxBeginNames && ctx.Err() == nil {
		rel := queue[0]
		queue = queue[1:]
		abs := filepath.Join(root, filepath.FromSlash(rel))
		ents, ok := readDirBatches(ctx, abs)
		if !ok {
			continue
		}
		fp, err := takeFingerprint(abs, rel)
		certain := err == nil && fp.isDir() && fp.Ctime <= since
		if certain {
			keys = append(keys, dirKey(rel))
		}
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			if p == skip {
				continue
			}
			if certain {
				keys = append(keys, nameKey(p))
			}
			foreign.check(e, p)
			if e.IsDir() {
				queue = append(queue, p)
			}
		}
	}
	return keys
}

// readDirBatches reads a folder's entries (unsorted), giving up when ctx
// ends; ok is false then, or when the folder cannot be read whole.
func readDirBatches(ctx context.Context, abs string) ([]fs.DirEntry, bool) {
	f, err := os.Open(abs)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var ents []fs.DirEntry
	for ctx.Err() == nil {
		batch, err := f.ReadDir(256)
		ents = append(ents, batch...)
		if errors.Is(err, io.EOF) {
			return ents, true
		}
		if err != nil {
			return nil, false
		}
	}
	return nil, false
}

func writeNames(name string, keys []uint64) error {
	buf := make([]byte, 8*len(keys))
	for i, k := range keys {
		binary.LittleEndian.PutUint64(buf[8*i:], k)
	}
	tmp := name + ".tmp" // renamed whole: a torn file would be a sorted prefix
	if err := os.WriteFile(tmp, buf, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// loadBeginNames reads the names a transaction reopened from its state
// kept: none when they were never all read (a crash during the read).
func loadBeginNames(dir string) (*beginNames, error) {
	bn := &beginNames{cancel: func() {}, done: make(chan struct{})}
	close(bn.done)
	buf, err := os.ReadFile(filepath.Join(dir, beginNamesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return bn, nil
	} else if err != nil {
		return nil, err
	}
	bn.keys = make([]uint64, len(buf)/8)
	for i := range bn.keys {
		bn.keys[i] = binary.LittleEndian.Uint64(buf[8*i:])
	}
	if !slices.IsSorted(bn.keys) {
		bn.keys = nil
	}
	return bn, nil
}

// ForeignOwned reports how many entries of the workspace a user or
// group other than the caller owns, and the first few of them: a
// non-root overlay booth cannot copy them up, so the agent cannot
// write to, rename or chmod them there (deleting needs no copy). It does not wait for the names
// read at Begin: all says whether that read was over (else n counts the
// entries read so far). None when jukebox runs as root.
func (tx *Tx) ForeignOwned() (n int, paths []string, all bool) {
	bn := tx.begin
	if bn == nil {
		return 0, nil, true
	}
	select {
	case <-bn.done:
		all = true
	default:
	}
	f := &bn.foreign
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, slices.Clone(f.paths), all
}

// stop ends the read and waits for it (a rollback removes its folder).
func (bn *beginNames) stop() {
	if bn != nil {
		bn.cancel()
		<-bn.done
	}
}

// wait waits for the read to end.
func (bn *beginNames) wait() {
	if bn != nil {
		<-bn.done
	}
}

// lookup waits for the names and reports whether rel was in its folder at
// Begin; known is false when that folder was not read unchanged.
func (bn *beginNames) lookup(rel string) (there, known bool) {
	if bn == nil {
		return false, false
	}
	<-bn.done
	has := func(k uint64) bool { _, ok := slices.BinarySearch(bn.keys, k); return ok }
	if !has(dirKey(path.Dir(rel))) {
		return false, false
	}
	return has(nameKey(rel)), true
}

// existedAtBegin reports whether rel, gone from the real side now, was
// there at Begin. Exact when its nearest folder still there has not
// changed since (nothing was added or removed beneath it), or from the
// names read at Begin; otherwise the overlay's origin mark on its staged
// copy decides: copied up in place, so it stood there, unless the copy-up
// came from another name still there (moved: a rename or link the agent
// made, whose origin is that name's inode).
func (tx *Tx) existedAtBegin(rel string, moved func(string) bool) bool {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		fp, err := takeFingerprint(tx.real(d), d)
		if err == nil && fp.isDir() {
			if fp.Ctime <= tx.meta.BeginCtime {
				return false
			}
			break
		}
		if d == "." {
			break
		}
	}
	if there, known := tx.begin.lookup(rel); known {
		return there
	}
	return hasOverlayOrigin(tx.up(rel)) && !moved(rel)
}
