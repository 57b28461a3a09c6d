package tapestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// bigTape writes a tape of about 6 MB: 20,000 frames of random output
// (the index alone is about a third of a MB).
func bigTape(t testing.TB, path string) {
	t.Helper()
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		buf := make([]byte, 120)
		for i := range 20_000 {
			rand.Read(buf)
			if _, err := w.Append(0, tapefmt.Output{Fd: 1, Data: []byte(fmt.Sprintf("%d %x", i, buf))}); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// storeOf opens a file:// store in a fresh folder, with a fresh cache.
func storeOf(t *testing.T) *Store {
	t.Helper()
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	loc, _ := Parse("file://" + t.TempDir() + "/")
	s, err := Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openRemote opens the store's tape at url through the opener, as
// tapefmt.Open does, and returns it with its object (for its GET count).
func openRemote(t *testing.T, url string, noCache bool) (*tapefmt.Tape, *object) {
	t.Helper()
	ra, size, closer, ok, err := Opener(noCache)(url)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	tp, err := tapefmt.NewWholeReader(ra, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return tp, closer.(*object)
}

// TestRemoteOpen: a store's tape opens where it lies in two ranged GETs
// made together (its header, and its footer with the index before it)
// whatever its size, a frame is fetched when it is read, the ranges come
// from the cache on the next open (no GET), and a tape read by
// tapefmt.Open through the opener is the tape uploaded.
func TestRemoteOpen(t *testing.T) {
	ctx := context.Background()
	s := storeOf(t)
	local := filepath.Join(t.TempDir(), "big.jbx")
	bigTape(t, local)
	up, err := s.Upload(ctx, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round, wantGets := range []int{2, 0} {
		tp, o := openRemote(t, up.URL, false)
		if o.gets != wantGets || tp.Head().String() != up.Head || tp.Len() != 20_002 {
			t.Errorf("open %d: %d GETs (want %d), head %s, %d frames", round, o.gets, wantGets, tp.Head(), tp.Len())
		}
		before := o.gets
		f, err := tp.Frame(10_000)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := f.Decode(); err != nil || p.(*tapefmt.Output).Fd != 1 {
			t.Errorf("frame 10,000: %v, %v", p, err)
		}
		if got := o.gets - before; round == 0 && got != 1 {
			t.Errorf("reading a frame in the middle: %d GETs, want 1 (its record; the index came with the footer)", got)
		}
	}

	// Through tapefmt.OpenWith, as every command reads tapes.
	tp, err := tapefmt.OpenWith(up.URL, Opener(true))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tp.Verify(tapefmt.VerifyOptions{Blobs: true})
	tp.Close()
	if err != nil || rep.Head.String() != up.Head {
		t.Errorf("verify of the store's tape: %v", err)
	}
	if _, err := tapefmt.OpenWith(s.Loc.TapeURL("missing.jbx"), Opener(true)); err == nil {
		t.Error("a missing tape opened")
	}
	// An object that is no tape is said to be so; a tape cut short is
	// said to be half uploaded.
	whole, _ := os.ReadFile(local)
	dir := strings.TrimPrefix(s.Loc.String(), "file://")
	os.WriteFile(filepath.Join(dir, "notes.jbx"), bytes.Repeat([]byte("hello world "), 100), 0o644)
	os.WriteFile(filepath.Join(dir, "half.jbx"), whole[:len(whole)/2], 0o644)
	for name, want := range map[string]string{"notes.jbx": "not a jukebox tape", "half.jbx": "half uploaded"} {
		if _, err := tapefmt.OpenWith(s.Loc.TapeURL(name), Opener(true)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("opening %s in place: %v, want %q", name, err, want)
		}
	}
}

// stepsTape writes a tape of steps whose frames lie between 100 KB blobs
// of random bytes (a file written each step), as an agent's tape does,
// and whose request bodies form a delta chain; it returns the hash of
// the last step's file and of its request body.
func stepsTape(t *testing.T, path string, steps int, seed string) (file, req tapefmt.Hash) {
	t.Helper()
	history := strings.Repeat("the system prompt and the conversation so far. ", 200)
	last, err := tapetest.WriteSteps(path, tapetest.Steps{
		Argv: []string{"agent", seed}, Steps: steps, Responses: true, FileSize: 100_000,
		Request: func(i int) []byte {
			history += fmt.Sprintf("turn %d of %s; ", i, seed)
			return []byte(history)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return last.File, last.Request
}

// TestRemotePrefetch: the turntable's first screen of rows comes in one
// round of GETs made together, each fetching only frame records (not the
// blobs between them); a blob deep in a delta chain comes in one GET (the
// window before it holds its bases).
func TestRemotePrefetch(t *testing.T) {
	ctx := context.Background()
	s := storeOf(t)
	local := filepath.Join(t.TempDir(), "steps.jbx")
	_, req := stepsTape(t, local, 40, "a")
	up, err := s.Upload(ctx, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, o := openRemote(t, up.URL, true)
	for _, err := range tp.Frames(0) { // loads the frame table, as the timeline does
		if err != nil {
			t.Fatal(err)
		}
	}
	before := o.gets
	tp.Prefetch([2]int{0, 64}) // run.start and 16 steps of 4 frames
	gets := o.gets - before
	if gets < 1 || gets > 16 {
		t.Errorf("prefetching 65 frames across 16 steps: %d GETs, want one per step at most", gets)
	}
	var fetched int64
	for _, sp := range o.spans {
		fetched += sp.hi - sp.lo
	}
	if fetched > 1<<20+64<<10+64<<10 { // the two open GETs, and frames: never the 1.6 MB of files between them
		t.Errorf("%d bytes fetched for a screen of frames", fetched)
	}
	before = o.gets
	for i := range 65 {
		if _, err := tp.Frame(i); err != nil {
			t.Fatal(err)
		}
	}
	if o.gets != before {
		t.Errorf("reading the prefetched frames: %d GETs, want none", o.gets-before)
	}
	// A listing read in order through a timeline asks once a block of
	// rows (64 frames), never once a row.
	var opened *object
	tl, err := timeline.OpenWith(up.URL, func(name string) (io.ReaderAt, int64, io.Closer, bool, error) {
		ra, size, c, ok, err := Opener(true)(name)
		opened, _ = c.(*object)
		return ra, size, c, ok, err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	opens := opened.gets
	for i := range tl.Len() {
		if r := tl.Row(i); r.Err != nil {
			t.Fatalf("row %d: %v", i, r.Err)
		}
	}
	if rounds := opened.rounds - 1; rounds > (tl.Len()+63)/64 {
		t.Errorf("%d rows read in order: %d rounds of requests (%d GETs), want one a block of 64 at most", tl.Len(), rounds, opened.gets-opens)
	}

	before = o.gets
	b, err := tp.Blob(req) // the 40th request: a delta of the 7 before (a whole one every 32)
	if err != nil || !strings.HasSuffix(string(b), "turn 39 of a; ") {
		t.Fatalf("request body: %v", err)
	}
	if got := o.gets - before; got > 2 {
		t.Errorf("a blob at the end of a delta chain of 7: %d GETs, want at most 2 (it, then the MiB before its base)", got)
	}
}

// TestBlobCacheAcrossTapes: a blob read from one store tape is kept by its
// address and read from there for another tape that names it (no GET);
// OwnBlob, what checks read, still reads the tape's own record; a kept
// blob whose bytes changed on disk is not used; and a cached range that
// no longer reads back is fetched again.
func TestBlobCacheAcrossTapes(t *testing.T) {
	ctx := context.Background()
	s := storeOf(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jbx"), filepath.Join(dir, "b.jbx")
	shared := make([]byte, 300<<10)
	rand.Read(shared)
	var h tapefmt.Hash
	for _, p := range []string{a, b} {
		err := tapefmt.CreateWith(p, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
			w.Append(0, tapefmt.RunStart{Argv: []string{"agent", p}})
			var err error
			if h, err = w.PutBlob("file", shared); err != nil {
				return err
			}
			w.Append(0, tapefmt.FileChange{Path: "f", Op: "write", Body: h})
			filler := make([]byte, 1500<<10) // beyond the last MiB that opening brings
			rand.Read(filler)
			g, err := w.PutBlob("file", filler)
			if err != nil {
				return err
			}
			_, err = w.Append(0, tapefmt.FileChange{Path: "g", Op: "write", Body: g})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	upA, err := s.Upload(ctx, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	upB, err := s.Upload(ctx, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	ta, oa := openRemote(t, upA.URL, false)
	before := oa.gets
	if got, err := ta.Blob(h); err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("blob from tape a: %v", err)
	}
	if oa.gets == before {
		t.Fatal("tape a's blob came without a GET")
	}
	tb, ob := openRemote(t, upB.URL, false)
	before = ob.gets
	if got, err := tb.Blob(h); err != nil || !bytes.Equal(got, shared) || ob.gets != before {
		t.Errorf("tape b's copy of the blob: %v, %d GETs (want none: kept by its address)", err, ob.gets-before)
	}
	if got, err := tb.OwnBlob(h); err != nil || !bytes.Equal(got, shared) || ob.gets == before {
		t.Errorf("tape b's own record: %v, %d GETs (want its record read)", err, ob.gets-before)
	}

	// A kept blob changed on disk is not taken for it.
	kept, err := os.ReadFile(oa.blobPath(h))
	if err != nil {
		t.Fatal(err)
	}
	kept[len(kept)-1] ^= 1
	if err := os.WriteFile(oa.blobPath(h), kept, 0o644); err != nil {
		t.Fatal(err)
	}
	tb2, _ := openRemote(t, upB.URL, false)
	if got, err := tb2.Blob(h); err != nil || !bytes.Equal(got, shared) {
		t.Errorf("with a kept blob changed on disk: %v, same bytes %v", err, bytes.Equal(got, shared))
	}

	// A cached range that no longer reads back is fetched again.
	for _, sp := range ob.spans {
		if sp.file != "" {
			os.WriteFile(filepath.Join(ob.dir, sp.file), make([]byte, sp.hi-sp.lo), 0o644)
		}
	}
	tb3, ob3 := openRemote(t, upB.URL, false)
	if tb3.Head().String() != upB.Head || ob3.gets == 0 {
		t.Errorf("with the cached ranges zeroed: head %s, %d GETs (want them fetched again)", tb3.Head(), ob3.gets)
	}
	if _, err := tb3.Verify(tapefmt.VerifyOptions{Blobs: true}); err != nil {
		t.Errorf("verify with the cached ranges zeroed: %v", err)
	}
}

// TestCacheKeepsDeltasAsRecords: a conversation's requests (each a delta
// of the one before) are kept as their records, not decoded (which would
// take the square of the conversation's length), and read back from the
// cache with no GET on the next open.
func TestCacheKeepsDeltasAsRecords(t *testing.T) {
	ctx := context.Background()
	s := storeOf(t)
	local := filepath.Join(t.TempDir(), "steps.jbx")
	stepsTape(t, local, 40, "c")
	up, err := s.Upload(ctx, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	readAll := func(tp *tapefmt.Tape) (decoded int) {
		for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
			if err != nil {
				t.Fatal(err)
			}
			p, _ := f.Decode()
			b, err := tp.Blob(p.(*tapefmt.LLMRequest).Body)
			if err != nil {
				t.Fatal(err)
			}
			decoded += len(b)
		}
		return decoded
	}
	tp, o := openRemote(t, up.URL, false)
	decoded := readAll(tp)
	var kept int64
	filepath.WalkDir(o.blobs, func(p string, d os.DirEntry, err error) error {
		if info, err := d.Info(); err == nil && !d.IsDir() {
			kept += info.Size()
		}
		return nil
	})
	if kept == 0 || kept > int64(decoded)/8 {
		t.Errorf("40 requests of %d bytes decoded: %d bytes kept by address, want the two whole ones compressed", decoded, kept)
	}
	tp2, o2 := openRemote(t, up.URL, false)
	if readAll(tp2) != decoded || o2.gets != 0 {
		t.Errorf("reading the requests again: %d GETs, want none (their records are kept)", o2.gets)
	}
}

// TestRemoteConcurrentReads: readers at once on one store tape (rows,
// screens prefetched, blobs, with little memory to keep them in) read
// what the file holds.
func TestRemoteConcurrentReads(t *testing.T) {
	ctx := context.Background()
	s := storeOf(t)
	local := filepath.Join(t.TempDir(), "steps.jbx")
	stepsTape(t, local, 60, "d")
	up, err := s.Upload(ctx, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tapefmt.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	defer func(m int64) { maxMem = m }(maxMem)
	maxMem = 256 << 10 // less than one screen's blobs: bytes are let go as they are read
	for _, noCache := range []bool{false, true} {
		tp, _ := openRemote(t, up.URL, noCache)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				for i := g; i < tp.Len(); i += 3 {
					tp.Prefetch([2]int{i, i + 20})
					f, err := tp.Frame(i)
					w, _ := want.Frame(i)
					if err != nil || !bytes.Equal(f.Payload, w.Payload) {
						errs <- fmt.Errorf("frame %d: %v", i, err)
						return
					}
					p, _ := f.Decode()
					for _, h := range tapefmt.BlobRefs(p) {
						b, err := tp.Blob(h)
						wb, _ := want.Blob(h)
						if err != nil || !bytes.Equal(b, wb) {
							errs <- fmt.Errorf("frame %d's blob %s: %v", i, h.Short(), err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("no cache %v: %v", noCache, err)
		}
	}
}

// TestHungStore: a store that takes requests and answers none hangs no
// reader: opening a tape gives up after the request timeout, and so does
// reading one whose HEAD was answered and whose GETs are not, reading its
// summary object and listing its store.
func TestHungStore(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 300 * time.Millisecond
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHUNG")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hung-secret")
	release := make(chan struct{})
	defer close(release)
	var answerHead atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && answerHead.Load() {
			w.Header().Set("Content-Length", "4096")
			w.Header().Set("ETag", `"hung"`)
			w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
			return
		}
		select { // answer nothing until the test ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	url := "s3://bucket/run.jbx?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true"
	for _, head := range []bool{false, true} {
		answerHead.Store(head)
		t0 := time.Now()
		err := func() error {
			ra, size, closer, _, err := Opener(true)(url)
			if err != nil {
				return err
			}
			defer closer.Close()
			if _, err = tapefmt.NewWholeReader(ra, size); err == nil {
				return nil
			}
			// Once a GET has given up, reads fail at once for a while
			// rather than each waiting out the store.
			t1 := time.Now()
			if _, rerr := ra.ReadAt(make([]byte, 10), 100); rerr == nil || time.Since(t1) > requestTimeout/2 {
				t.Errorf("a read after a GET gave up: %v after %s", rerr, time.Since(t1))
			}
			return err
		}()
		if err == nil || time.Since(t0) > 10*time.Second {
			t.Errorf("HEAD answered %v: %v after %s, want an error within seconds", head, err, time.Since(t0).Round(time.Millisecond))
		}
	}
	// The turntable's header word and its fork search give up too.
	t0 := time.Now()
	if _, err := RecordOf(context.Background(), url); err == nil || time.Since(t0) > 10*time.Second {
		t.Errorf("the summary object of a hung store: %v after %s", err, time.Since(t0))
	}
	t0 = time.Now()
	if _, err := Kin(context.Background(), url); err == nil || time.Since(t0) > 10*time.Second {
		t.Errorf("the forks in a hung store: %v after %s", err, time.Since(t0))
	}
}

// TestCloseEndsGETs: closing a store tape ends its GETs in flight at once
// (the turntable quits while a store that answers nothing holds one).
func TestCloseEndsGETs(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = time.Minute
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHUNG")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hung-secret")
	const size = 10 << 20
	release := make(chan struct{})
	defer close(release)
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodHead:
			w.Header().Set("Content-Length", strconv.Itoa(size))
			w.Header().Set("ETag", `"hung"`)
			w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		case gets.Add(1) <= 2: // opening's two GETs: zeros for the range asked
			var lo, hi int
			fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-%d", &lo, &hi)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", lo, hi, size))
			w.Header().Set("Content-Length", strconv.Itoa(hi-lo+1))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(make([]byte, hi-lo+1))
		default:
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	ra, _, closer, _, err := Opener(true)("s3://bucket/run.jbx?endpoint=" + srv.URL + "&region=us-east-1&use_path_style=true")
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := ra.ReadAt(make([]byte, 100), 5<<20) // in the middle: a GET that hangs
		read <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); gets.Load() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the read made %d GETs in 30 s, want 3 (the third hangs)", gets.Load())
		}
	}
	t0 := time.Now()
	closer.Close()
	select {
	case err := <-read:
		if err == nil || time.Since(t0) > 5*time.Second {
			t.Errorf("the read in flight at Close: %v after %s", err, time.Since(t0))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read in flight at Close did not end")
	}
}
