package tapestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

const agentRun = "../testdata/tapes/agent-run.jbx"

func TestParse(t *testing.T) {
	withAllDrivers(t)
	for _, c := range []struct {
		raw, bucket, prefix, name, err string
	}{
		{raw: "s3://team/runs/", bucket: "s3://team", prefix: "runs/"},
		{raw: "s3://team/runs", bucket: "s3://team", prefix: "runs/"},
		{raw: "s3://team", bucket: "s3://team"},
		{raw: "s3://team/a/b/run-1.jbx?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true",
			bucket: "s3://team?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true", prefix: "a/b/", name: "run-1.jbx"},
		{raw: "gs://b/p/", bucket: "gs://b", prefix: "p/"},
		{raw: "azblob://container/", bucket: "azblob://container"},
		{raw: "file:///srv/tapes/", bucket: "file:///srv/tapes"},
		{raw: "file:///srv/tapes/x.jbx", bucket: "file:///srv/tapes", name: "x.jbx"},
		{raw: "ftp://h/p/", err: `unknown scheme "ftp"`},
		{raw: "s3:///p/", err: "no bucket"},
		{raw: "s3://k:secret@b/p/", err: "credentials do not go in the URL"},
		{raw: "s3://b/p/?a=%zz", err: "the query does not read"},
		{raw: "s3://b/../p/", err: "has . or .. in it"},
		{raw: "file://host/srv/", err: "names a local folder"},
		{raw: "s3://b/p/.jbx", err: "names no tape"},
		{raw: "./tapes/run.jbx", err: "not a store URL"},
	} {
		l, err := Parse(c.raw)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q): %v, want an error with %q", c.raw, err, c.err)
			}
			if strings.Contains(c.raw, "secret") && err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("Parse(%q) repeats the secret: %v", c.raw, err)
			}
			continue
		}
		if err != nil || l.bucket != c.bucket || l.Prefix != c.prefix || l.Name != c.name {
			t.Errorf("Parse(%q) = bucket %q prefix %q name %q, %v; want %q %q %q", c.raw, l.bucket, l.Prefix, l.Name, err, c.bucket, c.prefix, c.name)
		}
	}
	l, _ := Parse("s3://team/runs/?region=us-east-1")
	if got := l.TapeURL("a.jbx"); got != "s3://team/runs/a.jbx?region=us-east-1" {
		t.Errorf("TapeURL: %q", got)
	}
}

// copyTape copies the bundled tape to dir/name.
func copyTape(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(agentRun)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileStore: upload (under a key with the tape id, verified after),
// the same upload again (nothing sent), an object of another content
// under the key (never overwritten), list with summaries, download
// (verified, never over another tape), and what a half-uploaded object
// and an object that is no tape are called.
func TestFileStore(t *testing.T) {
	ctx := context.Background()
	s, root := folderStore(t)
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	local := t.TempDir()
	tape := copyTape(t, local, "run.jbx")
	os.MkdirAll(sidecar.Dir(tape), 0o755)
	os.WriteFile(filepath.Join(sidecar.Dir(tape), "markers.json"), []byte(`[{"frame":3}]`), 0o644)
	var last int64
	up, err := s.Upload(ctx, tape, func(done, total int64) { last = done })
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := tapefmt.Open(tape)
	id := tp.ID()
	tp.Close()
	if up.Already || !up.Verified || up.Key != KeyFor("run.jbx", id) || !strings.HasPrefix(up.Key, "run-") || last != up.Size {
		t.Fatalf("upload: %+v (progress %d)", up, last)
	}
	loc, _ := Parse("file://" + root + "/")
	if key, ok := Noted(tape, loc.String()); !ok || key != up.Key {
		t.Errorf("the upload is not noted beside the tape: %q %v", key, ok)
	}
	again, err := s.Upload(ctx, tape, nil)
	if err != nil || !again.Already {
		t.Fatalf("the same upload again: %+v, %v", again, err)
	}

	// Another object under the key the next tape would take.
	other := copyTape(t, t.TempDir(), "other.jbx")
	tp, _ = tapefmt.Open(other)
	otherKey := KeyFor("other.jbx", tp.ID())
	tp.Close()
	if err := os.WriteFile(filepath.Join(root, otherKey), []byte("someone else's object"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Upload(ctx, other, nil); !errors.Is(err, ErrTaken) {
		t.Errorf("upload over another object: %v, want ErrTaken", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, otherKey)); string(b) != "someone else's object" {
		t.Errorf("the other object was overwritten: %q", b)
	}

	// A half-uploaded tape: the first half of its bytes.
	whole, _ := os.ReadFile(agentRun)
	os.WriteFile(filepath.Join(root, "half.jbx"), whole[:len(whole)/2], 0o644)

	entries, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]Entry{}
	for _, e := range entries {
		byKey[e.Key] = e
	}
	e, ok := byKey[up.Key]
	if len(entries) != 3 || !ok || e.Record == nil || e.Record.Summary == nil || e.Record.Summary.Calls == 0 || !e.Record.Verified || e.Size != up.Size {
		t.Fatalf("list: %+v", entries)
	}
	if h := byKey["half.jbx"]; h.Record != nil {
		t.Errorf("the half-uploaded object has a summary: %+v", h)
	}

	into := t.TempDir()
	p, err := s.Download(ctx, up.Key, into, nil)
	if err != nil || p.Already || p.Head != up.Head {
		t.Fatalf("download: %+v, %v", p, err)
	}
	if b, err := os.ReadFile(filepath.Join(sidecar.Dir(p.Path), "markers.json")); err != nil || string(b) != `[{"frame":3}]` {
		t.Errorf("the sidecar did not come with the tape: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(sidecar.Dir(p.Path), stateFile)); err == nil {
		t.Error("the upload notes travelled with the tape")
	}
	if p, err := s.Download(ctx, up.Key, into, nil); err != nil || !p.Already {
		t.Errorf("download again: %+v, %v", p, err)
	}
	os.WriteFile(filepath.Join(into, "run2.jbx"), whole, 0o644)
	if _, err := s.Download(ctx, up.Key, into, nil); err != nil {
		t.Errorf("download beside another tape: %v", err)
	}
	if _, err := s.Download(ctx, "half.jbx", into, nil); err == nil || !strings.Contains(err.Error(), "not a whole tape") {
		t.Errorf("download of a half-uploaded object: %v", err)
	}
	if _, err := s.Download(ctx, otherKey, into, nil); err == nil || !strings.Contains(err.Error(), "not a tape") {
		t.Errorf("download of an object that is no tape: %v", err)
	}

	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	path, cleanup, err := Local(ctx, loc.TapeURL(up.Key), false)
	if err != nil {
		t.Fatal(err)
	}
	cleanup()
	if tp, err := tapefmt.Open(path); err != nil || tp.Head().String() != up.Head {
		t.Errorf("Local: %s, %v", path, err)
	} else {
		tp.Close()
	}
	if _, _, err := Local(ctx, loc.String(), false); err == nil || !strings.Contains(err.Error(), "names a store, not a tape") {
		t.Errorf("Local of a store: %v", err)
	}
}

// TestUploadWhenTheNoteFails: a tape whose upload cannot be noted beside
// it (here a file stands where its sidecar folder would be; a read-only
// folder does the same) uploads all the same: the missing note is said,
// not taken for a failed upload.
func TestUploadWhenTheNoteFails(t *testing.T) {
	ctx := context.Background()
	loc, _ := Parse("file://" + t.TempDir() + "/")
	s, err := Open(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tape := copyTape(t, t.TempDir(), "run.jbx")
	if err := os.WriteFile(sidecar.Dir(tape), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	up, err := s.Upload(ctx, tape, nil)
	if err != nil || up.NoteError == "" || up.Already {
		t.Fatalf("upload when the note fails: %+v, %v", up, err)
	}
}

// folderStore opens a store over a new folder (file://), closed when the
// test ends, and returns it with the folder.
func folderStore(t *testing.T) (*Store, string) {
	t.Helper()
	root := t.TempDir()
	loc, err := Parse("file://" + root + "/")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}
