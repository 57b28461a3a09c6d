package tapestore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// flipped is the bundled tape with one byte of a frame flipped: the same
// size and chain head (the footer is untouched), and it fails verify.
func flipped(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x01
	return b
}

// TestDamagedTapeNotUploaded: a tape that fails verification is not
// uploaded (ErrDamaged, nothing under its key); with AllowDamaged it goes,
// marked as damaged in its summary object.
func TestDamagedTapeNotUploaded(t *testing.T) {
	ctx := context.Background()
	s, root := folderStore(t)
	tape := filepath.Join(t.TempDir(), "bad.jbx")
	if err := os.WriteFile(tape, flipped(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upload(ctx, tape, nil); !errors.Is(err, ErrDamaged) {
		t.Fatalf("upload of a damaged tape: %v, want ErrDamaged", err)
	}
	key := KeyFor("bad.jbx", mustID(t, tape))
	if _, err := os.Stat(filepath.Join(root, key)); !os.IsNotExist(err) {
		t.Fatalf("the damaged tape is in the store: %v", err)
	}
	up, err := s.UploadWith(ctx, tape, UploadOptions{AllowDamaged: true})
	if err != nil || !up.Damaged || up.Verified || up.VerifyError == "" {
		t.Fatalf("upload with AllowDamaged: %+v, %v", up, err)
	}
	r, err := RecordOf(ctx, s.Loc.TapeURL(key))
	if err != nil || r == nil || !r.Damaged || r.Verified {
		t.Errorf("the summary object of a damaged tape: %+v, %v", r, err)
	}
}

// TestFlippedCopyTakesTheKey: a copy with one flipped byte (same size,
// same chain head) holds the key; the intact tape is not "already" there:
// ErrTaken, saying the key holds a copy that differs.
func TestFlippedCopyTakesTheKey(t *testing.T) {
	ctx := context.Background()
	s, root := folderStore(t)
	tape := copyTape(t, t.TempDir(), "run.jbx")
	key := KeyFor("run.jbx", mustID(t, tape))
	if err := os.WriteFile(filepath.Join(root, key), flipped(t), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(ctx, tape, nil)
	if !errors.Is(err, ErrTaken) || up != nil {
		t.Fatalf("upload over a flipped copy: %+v, %v; want ErrTaken", up, err)
	}
	if !strings.Contains(err.Error(), "differs") {
		t.Errorf("the error does not say the key holds a differing copy: %v", err)
	}
	if _, ok := Noted(tape, s.Loc.String()); ok {
		t.Error("the tape is noted as uploaded")
	}
}

// TestBadDownloadNotKept: a download that fails verification is not kept,
// so the next pull fetches (and refuses) it again rather than saying it
// is already here; Local (replay, fork, pack) keeps nothing either.
func TestBadDownloadNotKept(t *testing.T) {
	ctx := context.Background()
	s, root := folderStore(t)
	if err := os.WriteFile(filepath.Join(root, "bad.jbx"), flipped(t), 0o644); err != nil {
		t.Fatal(err)
	}
	into := t.TempDir()
	for i := range 2 {
		p, err := s.Download(ctx, "bad.jbx", into, nil)
		if err == nil || (p != nil && p.Already) {
			t.Fatalf("download %d of a bad tape: %+v, %v", i, p, err)
		}
		if _, err := os.Stat(filepath.Join(into, "bad.jbx")); !os.IsNotExist(err) {
			t.Fatalf("download %d kept the bad tape: %v", i, err)
		}
	}
	cache := t.TempDir()
	t.Setenv("JUKEBOX_CACHE_DIR", cache)
	if _, _, err := Local(ctx, s.Loc.TapeURL("bad.jbx"), false); err == nil {
		t.Fatal("Local of a bad tape: no error")
	}
	files, _ := cacheFiles(cache)
	for _, f := range files {
		if strings.HasSuffix(f.path, ".jbx") || strings.Contains(f.path, "bad.jbx") {
			t.Errorf("the cache kept the bad tape: %s", f.path)
		}
	}
}

// blackHole is a loopback TCP listener that takes connections and never
// answers (a store under SIGSTOP, a black-holed endpoint).
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestUploadToStoreThatNeverAnswers: an upload to a store that accepts
// connections and never answers gives up (a StallError) instead of
// waiting for ever, and Fetch (verify, replay) does too, each saying how
// many times it waited.
func TestUploadToStoreThatNeverAnswers(t *testing.T) {
	defer func(d time.Duration) { requestTimeout = d }(requestTimeout)
	requestTimeout = 300 * time.Millisecond
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAHUNG")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "hung-secret")
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	url := "s3://bucket/ci/?endpoint=" + blackHole(t) + "&region=us-east-1&use_path_style=true"
	loc, err := Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tape := copyTape(t, t.TempDir(), "run.jbx")
	errc := make(chan error, 2)
	go func() {
		_, err := s.Upload(context.Background(), tape, nil)
		errc <- err
	}()
	go func() {
		_, err := Fetch(context.Background(), loc.TapeURL("run.jbx"), false)
		errc <- err
	}()
	for range 2 {
		select {
		case err := <-errc:
			var se *StallError
			if !errors.As(err, &se) {
				t.Errorf("against a store that never answers: %v, want a StallError", err)
			}
			// It names the wait of one attempt: it says how many it took
			// (a minute of ls reported "did not answer in 20s").
			if err != nil && strings.Contains(err.Error(), "JUKEBOX_STORE_REQUEST_TIMEOUT)") && !strings.Contains(err.Error(), "tried 3 times") {
				t.Errorf("a stall given up after its attempts: %v, want their count", err)
			}
		case <-time.After(2 * time.Minute): // a hang guard, far above the deadlines
			t.Fatal("an upload or a fetch waits for ever on a store that never answers")
		}
	}
}

// smallParts makes uploads go in parts of S3's smallest size for the
// test (a tape of a few parts is 15 MB, not 48).
func smallParts(t *testing.T) {
	was := partSize
	t.Cleanup(func() { partSize = was })
	partSize = 5 << 20
}

// hugeTape writes a tape of several upload parts (two of partSize and a
// little): file writes of 1 MiB each whose contents are random bytes in
// blobs, which no compression shrinks. The upload's check of it hashes
// each blob (assembly, fast under the race detector); the same bytes in
// output frames, JSON the check decodes, cost a second of CPU a part
// under the race detector each pass.
func hugeTape(t testing.TB, path string) {
	t.Helper()
	data := make([]byte, 1<<20)
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		for i := range int(2*partSize>>20) + 1 {
			rand.Read(data)
			h, err := w.PutBlob(fmt.Sprintf("file part-%d", i), data)
			if err != nil {
				return err
			}
			if _, err := w.Append(0, tapefmt.FileChange{Op: tapefmt.OpWrite, Path: fmt.Sprintf("part-%d", i), Mode: 0o644, Size: int64(len(data)), Body: h}); err != nil {
				return err
			}
		}
		_, err := w.Append(0, tapefmt.RunEnd{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 2*partSize {
		t.Fatalf("hugeTape: %v, %v bytes; want several parts", err, st)
	}
}

func mustID(t *testing.T, path string) [16]byte {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	return tp.ID()
}
