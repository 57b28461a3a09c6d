package tapestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TestIndexBounded: a store's index planted or damaged (a few kilobytes
// of zstd that decode to a million short lines, a record that is not
// JSON, an object larger than jukebox writes) made ls hold gigabytes and
// fail for the whole store. Each is ErrBadIndex naming the object, read
// within bounds (ls then lists the store from its summaries:
// TestStoreLsWithABadIndex).
func TestIndexBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, root := folderStore(t)
	s.maxEntries = 1000
	if err := s.indexUpload(ctx, fakeUpload("ok.jbx", time.Now())); err != nil {
		t.Fatal(err)
	}
	if keys, _ := indexKeysOf(t, s); len(keys) != 1 {
		t.Fatalf("the index lists %v", keys)
	}
	var z bytes.Buffer
	zw, err := zstd.NewWriter(&z)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte(strings.Repeat(`{"key":"a.jbx"}`+"\n", 5000)))
	zw.Close()
	bomb := indexSegments + "0-1-bomb.jsonl.zst"
	if err := s.Put(ctx, bomb, z.Bytes(), ""); err != nil {
		t.Fatal(err)
	}
	bad := func(what, key string) {
		t.Helper()
		_, _, err := s.Index(ctx)
		if !errors.Is(err, ErrBadIndex) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want ErrBadIndex naming %s", what, err, key)
		}
		os.Remove(filepath.Join(root, key))
	}
	bad("a segment of more entries than the bound", bomb)
	junk := indexRecords + "junk.json"
	if err := s.Put(ctx, junk, []byte("garbage"), ""); err != nil {
		t.Fatal(err)
	}
	bad("a record that is not JSON", junk)
	huge := indexRecords + "huge.json"
	f, err := os.Create(filepath.Join(root, huge))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(maxSmallObject + 1) // sparse: nothing written
	f.Close()
	bad("a record over the size of a small object", huge)
	if _, _, err := s.Index(ctx); err != nil {
		t.Errorf("the index with the planted objects gone: %v", err)
	}
}

// TestSymlinkedSidecarNotSent: a tape's sidecar folder that is a link
// (to ~/.aws, say) had push upload the folder's files into the store
// beside the tape and write its notes into the folder. Neither happens;
// the upload says its notes could not be written.
func TestSymlinkedSidecarNotSent(t *testing.T) {
	t.Parallel()
	s, root := folderStore(t)
	dir := t.TempDir()
	tape := copyTape(t, dir, "run.jbx")
	secrets := filepath.Join(t.TempDir(), "aws")
	if err := os.Mkdir(secrets, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secrets, "credentials"), []byte("aws_secret_access_key = S3CR3T"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secrets, tape+".d"); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(context.Background(), tape, nil)
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "credentials" {
			t.Errorf("the linked folder's file was sent: %s", p)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(secrets, stateFile)); err == nil {
		t.Errorf("the upload's notes were written into the linked folder")
	}
	if !strings.Contains(up.NoteError, "symbolic link") {
		t.Errorf("the upload's note error %q, want one naming the link", up.NoteError)
	}
}

// TestKeysWithControlCharactersNotListed: a store's key holding a control
// character (a clipboard-writing escape) was listed and pulled under that
// name, and printed raw. No upload writes one (its local name's are made
// "-"): it is not a tape's key.
func TestKeysWithControlCharactersNotListed(t *testing.T) {
	t.Parallel()
	s, root := folderStore(t)
	b, err := os.ReadFile(copyTape(t, t.TempDir(), "run.jbx"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k\x1b]52;c;cHduZWQ=\x07q.jbx", "bad\xffutf8.jbx", "ok.jbx"} {
		if err := os.WriteFile(filepath.Join(root, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Key != "ok.jbx" {
		t.Errorf("List: %+v, want ok.jbx alone", entries)
	}
	// A local file so named is uploaded under a key without them, and
	// listed.
	local := filepath.Join(t.TempDir(), "a\x1b[2Jb.jbx")
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(context.Background(), local, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(up.Key, "a-[2Jb-") || !tapeKey(up.Key) {
		t.Errorf("a tape named with an escape was uploaded as %q", up.Key)
	}
}

// TestCredentialsNotInTheURL: a key pasted into a store URL's query was
// echoed with its value in the error ("unknown query parameter"), and one
// in endpoint= was taken, printed and kept in the notes beside tapes. A
// URL carrying a credential is refused, its value never shown.
func TestCredentialsNotInTheURL(t *testing.T) {
	for _, raw := range []string{
		"s3://b/p/?endpoint=http://127.0.0.1:9&aws_secret_access_key=S3CR3T",
		"s3://b/p/?X-Amz-Signature=S3CR3T&region=us-east-1",
		"s3://b/p/?endpoint=http://user:S3CR3T@127.0.0.1:9",
		"azblob://c/p/?sig=S3CR3T",
		"s3://b/p/?session_token=S3CR3T",
	} {
		_, err := Parse(raw)
		if err == nil || strings.Contains(err.Error(), "S3CR3T") || !strings.Contains(err.Error(), "credentials do not go in the URL") {
			t.Errorf("Parse(%q): %v", raw, err)
		}
	}
	if _, err := Parse("s3://b/p/?endpoint=http://127.0.0.1:9&region=us-east-1&kmskeyid=k&use_path_style=true"); err != nil {
		t.Errorf("a URL without credentials: %v", err)
	}
}

// TestPullNotesFailAfterTheTape: a pull whose tape had come and verified
// but whose sidecar files did not (an interrupt just after, a store
// refusing one) was reported as the tape not pulled. The tape is pulled;
// the notes' failure is said apart.
func TestPullNotesFailAfterTheTape(t *testing.T) {
	t.Parallel()
	s, root := folderStore(t)
	local := copyTape(t, t.TempDir(), "run.jbx")
	if err := os.MkdirAll(local+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local+".d", "markers.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(context.Background(), local, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The store's copy of the notes is more than a reader takes.
	if err := os.Truncate(filepath.Join(root, up.Key+".d", "markers.json"), maxSmallObject+1); err != nil {
		t.Fatal(err)
	}
	p, err := s.Download(context.Background(), up.Key, t.TempDir(), nil)
	if err != nil || p == nil || p.NotesError == nil {
		t.Fatalf("a pull whose notes fail: %+v, %v; want the tape pulled and the notes' error apart", p, err)
	}
	if err := verifyFile(p.Path); err != nil {
		t.Errorf("the pulled tape: %v", err)
	}
}

// TestPullAllowDamaged: a tape pushed with --allow-damaged could never be
// pulled back (pull removed it when it did not verify). With
// allowDamaged it is kept, said damaged and why; without, it is not.
func TestPullAllowDamaged(t *testing.T) {
	t.Parallel()
	s, _ := folderStore(t)
	local := copyTape(t, t.TempDir(), "run.jbx")
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatal(err)
	}
	b[300] ^= 1 // a frame's payload
	if err := os.WriteFile(local, b, 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := s.UploadWith(context.Background(), local, UploadOptions{AllowDamaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Download(context.Background(), up.Key, t.TempDir(), nil); err == nil {
		t.Error("a damaged tape was pulled without allowDamaged")
	}
	dir := t.TempDir()
	for range 2 { // pulled, then already here
		p, err := s.DownloadDamaged(context.Background(), up.Key, dir, nil, true)
		if err != nil || p.Damage == "" {
			t.Fatalf("pull --allow-damaged: %+v, %v", p, err)
		}
	}
}
