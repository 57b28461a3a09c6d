package tapestore

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/tapefmt"
)

// bigTape writes a tape of about 8 MB: 60,000 frames of random output
// (the index alone is about 1 MB).
func bigTape(t testing.TB, path string) {
	t.Helper()
	err := tapefmt.CreateWith(path, tapefmt.Options{Sync: tapefmt.SyncNever}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		buf := make([]byte, 120)
		for i := range 60_000 {
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

// TestRemoteOpen: a store's tape opens where it lies in at most three
// ranged GETs (footer, header, index) whatever its size, a frame is
// fetched when it is read (its block, and the index the first time), the blocks come from the cache on the next open (no GET), and a
// tape read by tapefmt.Open through the opener is the tape uploaded.
func TestRemoteOpen(t *testing.T) {
	ctx := context.Background()
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	root := t.TempDir()
	loc, _ := Parse("file://" + root + "/")
	s, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	local := filepath.Join(t.TempDir(), "big.jbx")
	bigTape(t, local)
	up, err := s.Upload(ctx, local, nil)
	if err != nil {
		t.Fatal(err)
	}
	open := Opener(false)
	for round, wantGets := range []int{3, 0} {
		ra, size, closer, ok, err := open(up.URL)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		tp, err := tapefmt.NewWholeReader(ra, size)
		if err != nil {
			t.Fatal(err)
		}
		o := closer.(*object)
		if (wantGets == 0) != (o.gets == 0) || o.gets > 3 || tp.Head().String() != up.Head || tp.Len() != 60_002 {
			t.Errorf("open %d: %d GETs (want at most 3, none from the cache: %d), head %s, %d frames", round, o.gets, wantGets, tp.Head(), tp.Len())
		}
		before := o.gets
		f, err := tp.Frame(30_000)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := f.Decode(); err != nil || p.(*tapefmt.Output).Fd != 1 {
			t.Errorf("frame 30,000: %v, %v", p, err)
		}
		if got := o.gets - before; round == 0 && (got < 1 || got > 2) {
			t.Errorf("reading a frame in the middle: %d GETs, want its block and at most the index", got)
		}
		closer.Close()
	}

	// Through tapefmt.Open, as every command reads tapes.
	tapefmt.SetRemoteOpener(Opener(true))
	defer tapefmt.SetRemoteOpener(func(string) (_ io.ReaderAt, _ int64, _ io.Closer, _ bool, _ error) { return })
	tp, err := tapefmt.Open(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := tp.Verify(tapefmt.VerifyOptions{Blobs: true})
	tp.Close()
	if err != nil || rep.Head.String() != up.Head {
		t.Errorf("verify of the store's tape: %v", err)
	}
	if _, err := tapefmt.Open(loc.TapeURL("missing.jbx")); err == nil {
		t.Error("a missing tape opened")
	}
}
