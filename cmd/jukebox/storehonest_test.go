package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/s3test"
	"github.com/jukebox-os/jukebox/tapestore"
)

// flippedTape writes the bundled tape with one byte of a frame flipped
// (same size and chain head; it fails verify) to dir/name.
func flippedTape(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(agentRunTape)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/3] ^= 0x01
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, b, 0o644))
	return p
}

// TestRecordStoreNeverAnswers: record --store to a store that accepts
// connections and never answers exits with the agent's code once
// --store-timeout has passed, keeps the tape and names the push command.
func TestRecordStoreNeverAnswers(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held, never answered
		}
	}()
	defer ln.Close()
	url := "s3://tapes/ci/?endpoint=http://" + ln.Addr().String() + "&region=us-east-1&use_path_style=true"
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	cmd := jukeboxCmd(ctx, dir, "record", "-o", tape, "--store", url, "--store-timeout", "4s", "--", "sh", "-c", "echo hi; exit 3")
	cmd.Env = append(cmd.Env, "JUKEBOX_STORE_REQUEST_TIMEOUT=1s", "AWS_ACCESS_KEY_ID=AKIAHUNG", "AWS_SECRET_ACCESS_KEY=hung-secret",
		"JUKEBOX_CACHE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("record --store waits for ever on a store that never answers:\n%s", out)
	}
	var ee *exec.ExitError
	if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("record: %v, want the agent's exit 3\n%s", err, out)
	}
	if !strings.Contains(string(out), "it is kept at "+tape) || !strings.Contains(string(out), "jukebox push "+tape) {
		t.Errorf("record does not say where the tape is and how to push it:\n%s", out)
	}
	if _, err := os.Stat(tape); err != nil {
		t.Errorf("the tape was not kept: %v", err)
	}
}

func errorsAs(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*ee = e
	}
	return ok
}

// TestPushHonest: push of a tape that fails verification exits 3 and
// sends nothing (--allow-damaged sends it, and ls shows it damaged); a key
// held by a copy with a flipped byte is said to hold other bytes, exit
// non-zero, never "already".
func TestPushHonest(t *testing.T) {
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	store := t.TempDir()
	url := "file://" + store + "/"
	bad := flippedTape(t, t.TempDir(), "bad.jbx")
	out, errs := wantCode(t, 3, "push", bad, "--store", url)
	if !strings.Contains(out, "does not verify") {
		t.Errorf("push of a damaged tape:\n%s\n%s", out, errs)
	}
	if ents, _ := os.ReadDir(store); len(ents) != 0 {
		t.Fatalf("the damaged tape went to the store: %v", ents)
	}
	out, _ = wantCode(t, 0, "push", "--allow-damaged", bad, "--store", url)
	if !strings.Contains(out, "DAMAGED") {
		t.Errorf("push --allow-damaged:\n%s", out)
	}
	out, _ = wantCode(t, 0, "ls", url)
	if !strings.Contains(out, "NO:") {
		t.Errorf("ls does not show the damaged tape as such:\n%s", out)
	}

	// The intact tape whose key a flipped copy took.
	dir := t.TempDir()
	good := filepath.Join(dir, "bad.jbx")
	b, _ := os.ReadFile(agentRunTape)
	must(t, os.WriteFile(good, b, 0o644))
	out, _ = wantCode(t, 1, "push", "--check", "--json", good, "--store", url)
	var res []pushResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Uploaded != nil || !strings.Contains(res[0].Error, "other bytes") {
		t.Errorf("push over a flipped copy: %v\n%s", err, out)
	}
}

// TestPushPullBadTapeExit3: push of a file that is not a tape, or of a
// tape cut short, and pull of a tape that does not verify, or of an
// object that is not a tape, exit 3 as docs/exit-codes.md says of a
// damaged tape, not 1.
func TestPushPullBadTapeExit3(t *testing.T) {
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	store := t.TempDir()
	url := "file://" + store + "/"
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.jbx")
	must(t, os.WriteFile(junk, []byte("not a tape at all"), 0o644))
	cut := filepath.Join(dir, "cut.jbx")
	b, err := os.ReadFile(agentRunTape)
	must(t, err)
	must(t, os.WriteFile(cut, b[:len(b)-100], 0o644))
	for _, p := range []string{junk, cut} {
		if out, _ := wantCode(t, ExitBadTape, "push", p, "--store", url); !strings.Contains(out, "FAILED "+p) {
			t.Errorf("push %s:\n%s", p, out)
		}
	}

	bad := flippedTape(t, dir, "bad.jbx")
	out, _ := wantCode(t, ExitOK, "push", "--allow-damaged", bad, "--store", url)
	m := uploadedRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("push --allow-damaged:\n%s", out)
	}
	must(t, os.WriteFile(filepath.Join(store, "junk-0123456789ab.jbx"), []byte("not a tape at all"), 0o644))
	for _, u := range []string{m[2], url + "junk-0123456789ab.jbx"} {
		if out, _ := wantCode(t, ExitBadTape, "pull", u, "-o", t.TempDir()); !strings.Contains(out, "FAILED "+u) {
			t.Errorf("pull %s:\n%s", u, out)
		}
	}
}

// TestStoreCorruptedInPlace: an object changed in place under an
// unchanged ETag: verify of its URL says FAIL (exit 3) though the cache
// held the good bytes; pull refuses it, keeps nothing, and a second pull
// does not say "already here". Against a folder (its ETag is the mtime
// and size, both kept) and versitygw (the ETag is kept beside the file).
func TestStoreCorruptedInPlace(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		store := t.TempDir()
		corruptedInPlace(t, "file://"+store+"/", func(key string) string { return filepath.Join(store, key) })
	})
	t.Run("s3", func(t *testing.T) {
		s := s3test.Start(t)
		s.Setenv(t)
		url := s.Bucket(t, "tapes", "ci/")
		corruptedInPlace(t, url, func(key string) string { return s.ObjectPath("tapes", "ci/"+key) })
	})
}

func corruptedInPlace(t *testing.T, url string, object func(key string) string) {
	cache := t.TempDir()
	t.Setenv("JUKEBOX_CACHE_DIR", cache)
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	b, _ := os.ReadFile(agentRunTape)
	must(t, os.WriteFile(tape, b, 0o644))
	out, _ := wantCode(t, 0, "push", "--json", tape, "--store", url)
	var res []pushResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Uploaded == nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	remote := res[0].Uploaded.URL
	wantCode(t, 0, "verify", remote) // the cache now holds the good bytes

	p := object(res[0].Uploaded.Key)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := []byte{0}
	f.ReadAt(one, int64(len(b)/3))
	one[0] ^= 0x01
	_, err = f.WriteAt(one, int64(len(b)/3))
	must(t, err)
	must(t, f.Close())
	must(t, os.Chtimes(p, st.ModTime(), st.ModTime()))

	out, _ = wantCode(t, 3, "verify", remote)
	if !strings.HasPrefix(out, "FAIL") {
		t.Errorf("verify of the corrupted object:\n%s", out)
	}
	into := t.TempDir()
	for range 2 {
		out, _ = wantCode(t, ExitBadTape, "pull", remote, "-o", into)
		if strings.Contains(out, "already here") || !strings.Contains(out, "does not verify") {
			t.Errorf("pull of the corrupted object:\n%s", out)
		}
	}
	if ents, _ := os.ReadDir(into); len(ents) != 0 {
		t.Errorf("pull kept something of the corrupted object: %v", ents)
	}
}

// TestCacheBounded: the cache keeps a tape verified from a store once
// (at most 1.1x its bytes), JUKEBOX_CACHE_MAX bounds it (least recently
// used first), and cache info and prune say what it holds.
func TestCacheBounded(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("JUKEBOX_CACHE_DIR", cache)
	store := t.TempDir()
	url := "file://" + store + "/"
	b, _ := os.ReadFile(agentRunTape)
	var remotes []string
	for _, name := range []string{"a.jbx", "b.jbx", "c.jbx"} {
		// Three tapes under three keys (a copy under each name).
		tape := filepath.Join(t.TempDir(), name)
		must(t, os.WriteFile(tape, b, 0o644))
		out, _ := wantCode(t, 0, "push", "--json", tape, "--store", url)
		var res []pushResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Uploaded == nil {
			t.Fatalf("push: %v\n%s", err, out)
		}
		remotes = append(remotes, res[0].Uploaded.URL)
	}
	info := func() tapestore.CacheInfo {
		t.Helper()
		out, _ := wantCode(t, 0, "cache", "info", "--json")
		var ci tapestore.CacheInfo
		if err := json.Unmarshal([]byte(out), &ci); err != nil {
			t.Fatalf("cache info --json: %v\n%s", err, out)
		}
		return ci
	}
	wantCode(t, 0, "verify", remotes[0])
	wantCode(t, 0, "verify", remotes[0])
	if ci := info(); ci.Bytes > int64(len(b))*11/10 || ci.Tapes != 1 || ci.Dir != cache {
		t.Errorf("after verifying one tape of %d bytes twice, the cache: %+v", len(b), info())
	}
	t.Setenv("JUKEBOX_CACHE_MAX", "40000") // room for two of these tapes, not three
	for _, r := range remotes {
		wantCode(t, 0, "verify", r)
	}
	if ci := info(); ci.Bytes > 40000 || ci.Max != 40000 {
		t.Errorf("JUKEBOX_CACHE_MAX=40000: the cache holds %+v", ci)
	}
	out, _ := wantCode(t, 0, "cache", "prune", "--json")
	var ci tapestore.CacheInfo
	if err := json.Unmarshal([]byte(out), &ci); err != nil || ci.Bytes != 0 || ci.Removed == 0 {
		t.Errorf("cache prune: %v\n%s", err, out)
	}
	wantCode(t, 2, "cache", "prune", "--max", "lots")
	t.Setenv("JUKEBOX_CACHE_MAX", "lots")
	if _, errs := wantCode(t, 2, "cache", "info"); !strings.Contains(errs, "JUKEBOX_CACHE_MAX") {
		t.Errorf("cache info with JUKEBOX_CACHE_MAX=lots:\n%s", errs)
	}
}
