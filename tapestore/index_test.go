package tapestore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeUpload is the index record an upload of the tape key would write.
func fakeUpload(key string, at time.Time) *Uploaded {
	return &Uploaded{Key: key, Record: Record{ID: "00", Head: "00", Size: 100, Uploaded: at, Verified: true,
		Summary: &Summary{Name: strings.TrimSuffix(key, TapeExt), Started: at}}}
}

// indexKeysOf are the keys Index lists, and the stats of the read.
func indexKeysOf(t *testing.T, s *Store) (map[string]int, IndexStats) {
	t.Helper()
	entries, st, err := s.Index(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for _, e := range entries {
		keys[e.Key]++
		if e.URL != s.Loc.TapeURL(e.Key) || e.Record == nil || e.Record.Summary == nil {
			t.Fatalf("entry %+v: want its URL in this store and its record", e)
		}
	}
	return keys, st
}

// TestIndexCompacts (issue 35 item 7): uploads write index records, which
// are gathered into segments and the segments merged, so that reading
// the index of 600 tapes takes a few requests, not one per tape; each tape
// is listed once.
func TestIndexCompacts(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	ctx := context.Background()
	if _, _, err := s.Index(ctx); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("a store with no index: %v, want ErrNoIndex", err)
	}
	const n = compactAt*fanout + compactAt + 7 // a merge, a level-0 segment and records
	t0 := time.Now()
	for i := range n {
		if err := s.indexUpload(ctx, fakeUpload(fmt.Sprintf("t%04d.jbx", i), t0.Add(time.Duration(i)))); err != nil {
			t.Fatal(err)
		}
	}
	keys, st := indexKeysOf(t, s)
	if len(keys) != n {
		t.Fatalf("the index lists %d tapes, want %d", len(keys), n)
	}
	if st.Records >= compactAt || st.Segments > fanout || st.Gets > compactAt+fanout || st.Lists != 2 {
		t.Errorf("reading the index of %d tapes: %+v, want under %d records, at most %d segments, 2 LISTs", n, st, compactAt, fanout)
	}
	// A second upload of a tape (push again) lists it once, the latest.
	again := fakeUpload("t0003.jbx", t0.Add(time.Hour))
	if err := s.indexUpload(ctx, again); err != nil {
		t.Fatal(err)
	}
	entries, _, err := s.Index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Key == "t0003.jbx" && !e.Record.Uploaded.Equal(again.Uploaded) {
			t.Errorf("a tape uploaded twice lists its first upload (%v), want the latest", e.Record.Uploaded)
		}
	}
	if len(entries) != n {
		t.Errorf("after a second upload of one tape: %d entries, want %d", len(entries), n)
	}
}

// TestIndexConcurrentUploadersAndReaders: uploaders compacting at once
// lose nothing and list nothing twice, and a reader meanwhile never misses
// a tape whose upload had ended before its read began.
func TestIndexConcurrentUploadersAndReaders(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	ctx := context.Background()
	const writers, each = 4, compactAt * 2
	var mu sync.Mutex
	done := map[string]bool{}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				key := fmt.Sprintf("w%d-%04d.jbx", w, i)
				if err := s.indexUpload(ctx, fakeUpload(key, time.Now())); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				done[key] = true
				mu.Unlock()
			}
		})
	}
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for reads := 0; ; reads++ {
			select {
			case <-stop:
				return
			default:
			}
			mu.Lock()
			before := make([]string, 0, len(done))
			for k := range done {
				before = append(before, k)
			}
			mu.Unlock()
			entries, _, err := s.Index(ctx)
			if errors.Is(err, ErrNoIndex) && len(before) == 0 {
				continue
			}
			if err != nil {
				t.Errorf("read %d: %v", reads, err)
				return
			}
			listed := map[string]int{}
			for _, e := range entries {
				listed[e.Key]++
			}
			for _, k := range before {
				if listed[k] != 1 {
					t.Errorf("read %d: %s, uploaded before the read began, is listed %d times", reads, k, listed[k])
					return
				}
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-readerDone
	keys, _ := indexKeysOf(t, s)
	if len(keys) != writers*each {
		t.Errorf("after %d concurrent uploads the index lists %d tapes", writers*each, len(keys))
	}
}

// TestIndexHostile: an index entry naming a key no upload writes (a path
// out of the store, a folder) is left out; a segment that does not
// decode is an error naming it.
func TestIndexHostile(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	ctx := context.Background()
	now := time.Now()
	var es []Entry
	for _, k := range []string{"../../etc/passwd.jbx", "sub/x.jbx", "ok.jbx", ".jbx", "notatape.txt"} {
		es = append(es, Entry{Key: k, Record: &fakeUpload(k, now).Record})
	}
	if err := s.WriteIndex(ctx, es); err != nil {
		t.Fatal(err)
	}
	keys, _ := indexKeysOf(t, s)
	if len(keys) != 1 || keys["ok.jbx"] != 1 {
		t.Errorf("the index lists %v, want ok.jbx alone", keys)
	}
	if err := s.Put(ctx, indexSegments+"0-1-bad.jsonl.zst", []byte("not zstd"), ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Index(ctx); err == nil || !strings.Contains(err.Error(), "0-1-bad.jsonl.zst") {
		t.Errorf("a segment that does not decode: %v, want an error naming it", err)
	}
}

// TestReindex: a store whose tapes were uploaded without an index (an
// earlier jukebox) has none; reindex writes it from the summary objects,
// and ls then reads it.
func TestReindex(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"a.jbx", "b.jbx"} {
		if _, err := s.Upload(ctx, copyTape(t, dir, name), nil); err != nil {
			t.Fatal(err)
		}
	}
	// As an earlier jukebox left it: no index.
	recs, err := s.indexKeys(ctx, indexRecords, &IndexStats{})
	if err != nil || len(recs) != 2 {
		t.Fatalf("index records after two uploads: %v %v", recs, err)
	}
	if err := s.deleteIndex(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Index(ctx); !errors.Is(err, ErrNoIndex) {
		t.Fatalf("%v, want ErrNoIndex", err)
	}
	n, err := s.Reindex(ctx)
	if err != nil || n != 2 {
		t.Fatalf("reindex: %d, %v", n, err)
	}
	keys, st := indexKeysOf(t, s)
	if len(keys) != 2 || st.Segments != 1 || st.Records != 0 {
		t.Errorf("after reindex: %v, %+v", keys, st)
	}
}
