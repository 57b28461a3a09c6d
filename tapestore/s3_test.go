package tapestore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/s3test"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestS3DownMidUpload: the S3 server stops while a tape's parts are on
// their way; the upload fails, no object is left under the key (a
// multipart upload is completed only whole), the local tape is as it
// was, and the next upload, once the server is back, aborts the
// interrupted multipart upload and completes the tape: no parts are left.
func TestS3DownMidUpload(t *testing.T) {
	smallParts(t)
	srv, s := s3Store(t)
	ctx := context.Background()
	local := filepath.Join(t.TempDir(), "big.jbx")
	hugeTape(t, local)
	// The tape is several parts long: stop the server once the second is
	// on its way (the multipart upload begun).
	stopped := false
	_, err := s.Upload(ctx, local, func(done, total int64) {
		if !stopped && done > partSize+partSize/2 {
			stopped = true
			srv.Stop()
		}
	})
	if err == nil {
		t.Fatalf("the tape went up before the server stopped: bigTape must make a tape of several %d-byte parts", partSize)
	}
	srv.Restart(t)
	if ok, err := s.b.Exists(ctx, KeyFor("big.jbx", mustID(t, local))); err != nil || ok {
		t.Fatalf("after the failed upload, an object is under the key: %v, %v", ok, err)
	}
	up, err := s.Upload(ctx, local, nil)
	if err != nil || up.Already {
		t.Fatalf("upload after the server came back: %+v, %v", up, err)
	}
	tp, err := tapefmt.Open(local)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if up.Head != tp.Head().String() {
		t.Errorf("uploaded head %s, local %s", up.Head, tp.Head())
	}
	if again, err := s.Upload(ctx, local, nil); err != nil || !again.Already {
		t.Errorf("upload again: %+v, %v", again, err)
	}
	// The multipart upload the stop cut short was aborted (by the upload
	// that followed: the store was down when it was cut).
	if n := multipartUploads(t, s, up.Key); n != 0 {
		t.Errorf("%d interrupted multipart uploads of %s are left in the store", n, up.Key)
	}
}

// s3Store starts versitygw with a bucket "tapes" and opens the store
// tapes/ci/ in it (with a fresh cache), closed when the test ends.
func s3Store(t *testing.T) (*s3test.Server, *Store) {
	t.Helper()
	srv := s3test.Start(t)
	srv.Setenv(t)
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	loc, err := Parse(srv.Bucket(t, "tapes", "ci/"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return srv, s
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
