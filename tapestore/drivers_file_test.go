package tapestore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFolderWrittenByFileblob: a folder store as earlier releases wrote it
// through gocloud.dev's fileblob (an ".attrs" file beside each object)
// lists, reads and lists again after a delete without those files, and the
// tapes in it open.
func TestFolderWrittenByFileblob(t *testing.T) {
	s, root := folderStore(t)
	ctx := context.Background()
	tape := copyTape(t, root, "run-0123456789ab.jbx")
	attrs := `{"user.cache_control":"","user.content_disposition":"","user.content_encoding":"","user.content_language":"","user.content_type":"application/octet-stream","user.metadata":{"jukebox-head":"x"},"md5":null}`
	for _, p := range []string{tape + attrsExt, filepath.Join(root, "run-0123456789ab.jbx.summary.json.attrs")} {
		if err := os.WriteFile(p, []byte(attrs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "run-0123456789ab.jbx.summary.json"), []byte(`{"tape_id":"0123456789ab"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var keys []string
	it := s.b.List("", "")
	for {
		o, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	if want := "run-0123456789ab.jbx run-0123456789ab.jbx.summary.json"; strings.Join(keys, " ") != want {
		t.Errorf("listing: %q, want %q (no .attrs file)", keys, want)
	}
	es, err := s.List(ctx)
	if err != nil || len(es) != 1 || es[0].Key != "run-0123456789ab.jbx" {
		t.Fatalf("List: %+v, %v", es, err)
	}
	tp, _, err := s.openRemote(ctx, es[0].Key)
	if err != nil {
		t.Fatalf("the tape does not open: %v", err)
	}
	tp.Close()
	if err := s.b.Delete(ctx, "run-0123456789ab.jbx"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tape + attrsExt); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("fileblob's attributes file stays after the delete: %v", err)
	}
	if err := s.b.Delete(ctx, "run-0123456789ab.jbx"); codeOf(err) != codeNotFound {
		t.Errorf("deleting a missing key: %v, want not found", err)
	}
}

// TestFolderWrites: a write appears whole at Close, never when cut short;
// a conditional write does not replace an object; keys that would leave
// the folder, or name what no key can, are refused before anything is
// written.
func TestFolderWrites(t *testing.T) {
	s, root := folderStore(t)
	ctx := context.Background()
	cctx, cancel := context.WithCancel(ctx)
	w, err := s.b.NewWriter(cctx, "a/b.json", writerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("half"))
	if ok, _ := s.b.Exists(ctx, "a/b.json"); ok {
		t.Error("an object appears before its writer closes")
	}
	cancel()
	if err := w.Close(); err == nil {
		t.Error("a write cut short closes without an error")
	}
	if ok, _ := s.b.Exists(ctx, "a/b.json"); ok {
		t.Error("a write cut short left an object")
	}
	if err := s.b.WriteAll(ctx, "a/b.json", []byte("one"), writerOptions{IfNotExist: true}); err != nil {
		t.Fatal(err)
	}
	err = s.b.WriteAll(ctx, "a/b.json", []byte("two"), writerOptions{IfNotExist: true})
	if codeOf(err) != codeExists {
		t.Errorf("a conditional write over an object: %v, want refused", err)
	}
	if b, _ := s.b.ReadAll(ctx, "a/b.json"); string(b) != "one" {
		t.Errorf("the object holds %q after a refused write, want %q", b, "one")
	}
	r, err := s.b.NewRangeReader(ctx, "a/b.json", 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "n" || r.Size() != 3 {
		t.Errorf("range 1+1: %q of %d bytes, want \"n\" of 3", b, r.Size())
	}
	for _, k := range []string{"../out.json", "a/../../out.json", "/abs.json", "a//b", "x.attrs", "dir/", ""} {
		if err := s.b.WriteAll(ctx, k, []byte("x"), writerOptions{}); codeOf(err) != codeInvalid {
			t.Errorf("write of key %q: %v, want refused", k, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(root), "out.json")); err == nil {
		t.Error("a key left the folder")
	}
	left, _ := filepath.Glob(filepath.Join(root, "a", ".*"+tmpExt))
	if len(left) > 0 {
		t.Errorf("writes left %v behind", left)
	}
}

// TestFolderMissing: a folder store that is not there is said so, with
// how to have it made; create_dir=true makes it.
func TestFolderMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tapes")
	for _, c := range []struct{ query, want string }{{"", "does not exist (make it, or add ?create_dir=true"}, {"?create_dir=true", ""}, {"?bogus=1", `unknown query parameter "bogus"`}} {
		loc, err := Parse("file://" + dir + "/" + c.query)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(context.Background(), loc)
		if c.want == "" {
			if err != nil {
				t.Errorf("%q: %v", c.query, err)
				continue
			}
			s.Close()
			if _, err := os.Stat(dir); err != nil {
				t.Errorf("create_dir=true made no folder: %v", err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.query, err, c.want)
		}
	}
}

// TestNotFoundNamesTheUploadedKey: push keeps run.jbx as run-ID.jbx; the
// URL a user tries next (STORE/run.jbx) is not found, and the error names
// the key it was uploaded under; a name never pushed gets no guess.
func TestNotFoundNamesTheUploadedKey(t *testing.T) {
	ctx := context.Background()
	s, root := folderStore(t)
	up, err := s.Upload(ctx, copyTape(t, t.TempDir(), "run.jbx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Local(ctx, "file://"+root+"/run.jbx", true)
	if err == nil || !strings.Contains(err.Error(), "not found") || !strings.Contains(err.Error(), up.URL) {
		t.Errorf("fetching run.jbx after its push: %v, want not found naming %s", err, up.URL)
	}
	_, _, err = Local(ctx, "file://"+root+"/other.jbx", true)
	if err == nil || strings.Contains(err.Error(), "push keeps") {
		t.Errorf("fetching a tape never pushed: %v, want not found alone", err)
	}
	// pull and the commands that read a tape in place (cost URL) said
	// only "not found".
	if _, err := s.Download(ctx, "run.jbx", t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), up.URL) {
		t.Errorf("pulling run.jbx after its push: %v, want not found naming %s", err, up.URL)
	}
	if _, _, _, _, err := Opener(true)("file://" + root + "/run.jbx"); err == nil || !strings.Contains(err.Error(), up.URL) {
		t.Errorf("opening run.jbx in the store after its push: %v, want not found naming %s", err, up.URL)
	}
}
