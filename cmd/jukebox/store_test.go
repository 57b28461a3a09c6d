package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/s3test"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapestore"
)

// storeCase is a store to run the store tests against: its URL, and how to
// take it down and bring it back (nil where it cannot go down).
type storeCase struct {
	url        string
	down, back func()
}

// fileStore is a store in a local folder.
func fileStore(t *testing.T) storeCase {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hidden := dir + ".away"
	return storeCase{url: "file://" + dir + "/",
		down: func() { must(t, os.Rename(dir, hidden)) },
		back: func() { must(t, os.Rename(hidden, dir)) }}
}

var uploadedRe = regexp.MustCompile(`uploaded (\S+) to (\S+) \(`)

// testStore runs the store's whole round: record with --store, ls, the
// reading commands on the store URL, pull, push (noted, --check), a store
// that is down (the tape kept, push later), two recorders at once, and a
// malformed --store (exit 2 before the agent starts).
func testStore(t *testing.T, sc storeCase) {
	t.Setenv("JUKEBOX_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	_, errs := wantCode(t, 0, "record", "-o", tape, "--store", sc.url, "--tag", "team=search", "--", "sh", "-c", "echo hello from the agent")
	m := uploadedRe.FindStringSubmatch(errs)
	if m == nil || m[1] != tape || !strings.Contains(errs, "verified before upload") {
		t.Fatalf("record --store did not say it uploaded:\n%s", errs)
	}
	remote := m[2]
	if !strings.HasPrefix(remote, strings.Split(sc.url, "?")[0]) || !strings.HasSuffix(strings.Split(remote, "?")[0], ".jbx") {
		t.Fatalf("the tape's URL %q is not in the store %q", remote, sc.url)
	}

	out, _ := wantCode(t, 0, "ls", sc.url)
	if !strings.Contains(out, "VERIFIED") || !regexp.MustCompile(`run-[0-9a-f]{12}\s.*\byes\b`).MatchString(out) {
		t.Errorf("ls of the store:\n%s", out)
	}
	out, _ = wantCode(t, 0, "ls", "--json", sc.url)
	var entries []tapestore.Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 1 || entries[0].Record == nil || entries[0].Record.Summary == nil {
		t.Errorf("ls --json of the store: %v\n%s", err, out)
	} else if tags := entries[0].Record.Summary.Tags; tags["team"] != "search" {
		t.Errorf("ls --json of the store: tags %v, want team=search", tags)
	}
	// The run's tags: shown, and ls --tag lists by them.
	if out, _ = wantCode(t, 0, "ls", "--tag", "team=search", sc.url); !strings.Contains(out, "TAGS") || !strings.Contains(out, "team=search") {
		t.Errorf("ls --tag team=search of the store:\n%s", out)
	}
	if out, _ = wantCode(t, 0, "ls", "--tag", "team=infra", sc.url); !strings.Contains(out, "no tapes tagged team=infra in") {
		t.Errorf("ls --tag team=infra of the store:\n%s", out)
	}
	// ls read the index the upload wrote; --full reads the summaries, and
	// reindex writes the index again from them.
	if out, _ = wantCode(t, 0, "ls", "--full", sc.url); !regexp.MustCompile(`run-[0-9a-f]{12}\s.*\byes\b`).MatchString(out) {
		t.Errorf("ls --full of the store:\n%s", out)
	}
	if out, _ = wantCode(t, 0, "reindex", sc.url); !strings.Contains(out, "indexed 1 tapes") {
		t.Errorf("reindex of the store:\n%s", out)
	}
	if out, errs := wantCode(t, 0, "ls", sc.url); !regexp.MustCompile(`run-[0-9a-f]{12}\s.*\byes\b`).MatchString(out) || strings.Contains(errs, "no index") {
		t.Errorf("ls of the store after reindex:\n%s%s", out, errs)
	}

	// Reading commands take the tape's URL.
	out, _ = wantCode(t, 0, "show", remote)
	if !strings.Contains(out, "hello from the agent") {
		t.Errorf("show of the store's tape:\n%s", out)
	}
	wantCode(t, 0, "verify", remote)
	wantCode(t, 0, "--no-cache", "cost", remote)
	// --no-cache keeps nothing: verify left a temporary folder with the
	// whole tape in it behind, at every run.
	// In process (jb): this test binary holds the drivers the store
	// needs (the GCS and Azure rounds' tags), the default jukebox not.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, cmd := range []string{"verify", "show", "cost", "replay"} {
		if code, _, errs := jb(t, "--no-cache", cmd, remote); code != ExitOK {
			t.Errorf("--no-cache %s: exit %d\n%s", cmd, code, errs)
		}
		if left, _ := os.ReadDir(tmp); len(left) > 0 {
			t.Errorf("--no-cache %s left %s in the temporary folder", cmd, left[0].Name())
			os.RemoveAll(filepath.Join(tmp, left[0].Name()))
		}
	}
	out, _ = wantCode(t, 0, "replay", remote)
	if !strings.Contains(out, "hello from the agent") {
		t.Errorf("replay from the store:\n%s", out)
	}

	into := t.TempDir()
	out, _ = wantCode(t, 0, "pull", remote, "-o", into)
	if !strings.Contains(out, "pulled "+remote) || !strings.Contains(out, "verified") {
		t.Errorf("pull:\n%s", out)
	}
	out, _ = wantCode(t, 0, "pull", remote, "-o", into)
	if !strings.Contains(out, "already here") {
		t.Errorf("pull again:\n%s", out)
	}

	out, _ = wantCode(t, 0, "push", dir, "--store", sc.url)
	if !strings.Contains(out, "uploaded before") {
		t.Errorf("push of a noted tape:\n%s", out)
	}
	// A marker added since: the next (cron) push said "uploaded before"
	// and the store kept the old markers; only push --check sent them.
	markers := filepath.Join(sidecar.Dir(tape), "markers.json")
	must(t, os.WriteFile(markers, []byte(`{"markers":[{"frame":1,"note":"look here"}]}`), 0o644))
	if out, _ = wantCode(t, 0, "push", dir, "--store", sc.url); strings.Contains(out, "uploaded before") {
		t.Errorf("push after a marker was added:\n%s", out)
	}
	fresh := t.TempDir()
	wantCode(t, 0, "pull", remote, "-o", fresh)
	if b, err := os.ReadFile(filepath.Join(sidecar.Dir(filepath.Join(fresh, filepath.Base(strings.Split(remote, "?")[0]))), "markers.json")); err != nil || !strings.Contains(string(b), "look here") {
		t.Errorf("the store's markers after the push: %q %v", b, err)
	}
	if out, _ = wantCode(t, 0, "push", dir, "--store", sc.url); !strings.Contains(out, "uploaded before") {
		t.Errorf("push with nothing changed since:\n%s", out)
	}
	out, _ = wantCode(t, 0, "push", "--check", tape, "--store", sc.url)
	if !strings.Contains(out, "already in the store") {
		t.Errorf("push --check:\n%s", out)
	}

	// The store goes down: the run goes on, exits with the agent's code,
	// keeps its tape and says how to push it; push completes it.
	if sc.down != nil {
		sc.down()
		kept := filepath.Join(dir, "kept.jbx")
		_, errs = wantCode(t, 3, "record", "-o", kept, "--store", sc.url, "--", "sh", "-c", "echo down; exit 3")
		if !strings.Contains(errs, "warning") || !strings.Contains(errs, "it is kept at "+kept) || !strings.Contains(errs, "jukebox push") {
			t.Errorf("record with the store down:\n%s", errs)
		}
		if _, err := os.Stat(kept); err != nil {
			t.Fatalf("the tape was not kept: %v", err)
		}
		// A push while it is down finds so once, and tries no tape
		// (each tape's retries in turn took seconds a tape).
		other := filepath.Join(dir, "other.jbx")
		must(t, copyFile(kept, other, 0o644))
		out, errs = wantCode(t, ExitInternal, "push", kept, other, "--store", sc.url)
		// (A folder store moved away is not there; a server down does not
		// answer.)
		if strings.Count(errs, "jukebox: push:") != 1 || strings.Count(out, "not tried: the store does not answer")+strings.Count(out, "not tried: the store is not there") != 2 {
			t.Errorf("push with the store down:\n%s%s", out, errs)
		}
		os.Remove(other)
		sc.back()
		out, _ = wantCode(t, 0, "push", dir, "--store", sc.url)
		if !strings.Contains(out, "uploaded "+kept) || !strings.Contains(out, "uploaded before") {
			t.Errorf("push after the store came back:\n%s", out)
		}
	}

	// Two recorders with the same tape name, at once: two keys.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	logs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			codes[i], _, logs[i] = jb(t, "record", "-o", filepath.Join(t.TempDir(), "same.jbx"), "--store", sc.url, "--", "sh", "-c", "echo twin")
		})
	}
	wg.Wait()
	a, b := uploadedRe.FindStringSubmatch(logs[0]), uploadedRe.FindStringSubmatch(logs[1])
	if codes[0] != 0 || codes[1] != 0 || a == nil || b == nil || a[2] == b[2] {
		t.Errorf("two recorders at once: exits %v\n%s\n%s", codes, logs[0], logs[1])
	}

	// A copy with one flipped byte takes a key first (pushed with
	// --allow-damaged: the same tape id and name, so the same key): the
	// intact tape is not "already" there, and the copy is refused by
	// verify and pull, which keep nothing of it.
	flippedKey(t, sc.url)

	// A malformed store is refused before the agent starts.
	marker := filepath.Join(dir, "ran")
	// So is one its driver does not take: a typo in a parameter
	// (use_path_styl) was a warning, and the run went on to upload nothing.
	typo := sc.url + "?bogus=1"
	if strings.Contains(sc.url, "?") {
		typo = sc.url + "&bogus=1"
	}
	for _, bad := range []string{"ftp://h/p/", "s3:///p/", "s3://b/p/x.jbx", typo} {
		wantCode(t, 2, "record", "-o", filepath.Join(dir, "bad.jbx"), "--store", bad, "--", "sh", "-c", "touch "+marker)
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("--store %s: the agent ran", bad)
		}
	}
	wantCode(t, 2, "ls", "ftp://h/p/")
	t.Setenv("JUKEBOX_STORE", "gopher://nowhere/")
	wantCode(t, 2, "record", "-o", filepath.Join(dir, "bad.jbx"), "--", "sh", "-c", "touch "+marker)
}

// TestFileStore runs the store round against a folder (file://).
func TestFileStore(t *testing.T) { testStore(t, fileStore(t)) }

// TestS3Store runs the store round against a real S3-compatible server
// (the Versity S3 Gateway, which the test command builds): the store goes
// down by stopping it, and comes back on the same port. Then wrong
// credentials: a warning at start, the tape kept, push later.
func TestS3Store(t *testing.T) {
	s := s3test.Start(t)
	s.Setenv(t)
	url := s.Bucket(t, "tapes", "team/runs/")
	testStore(t, storeCase{url: url, down: s.Stop, back: func() { s.Restart(t) }})

	dir := t.TempDir()
	tape := filepath.Join(dir, "creds.jbx")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
	_, errs := wantCode(t, 0, "record", "-o", tape, "--store", url, "--", "sh", "-c", "echo wrong keys")
	if !strings.Contains(errs, "access refused") || !strings.Contains(errs, "it is kept at "+tape) {
		t.Errorf("record with wrong credentials:\n%s", errs)
	}
	if strings.Contains(errs, "SDK ") {
		t.Errorf("the AWS SDK's own log reached stderr:\n%s", errs)
	}
	wantCode(t, 1, "push", tape, "--store", url)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.Secret)
	out, _ := wantCode(t, 0, "push", tape, "--store", url)
	if !strings.Contains(out, "uploaded "+tape) {
		t.Errorf("push with the right credentials:\n%s", out)
	}
}

func flippedKey(t *testing.T, url string) {
	t.Helper()
	bad := flippedTape(t, t.TempDir(), "twin.jbx")
	wantCode(t, 3, "push", bad, "--store", url)
	out, _ := wantCode(t, 0, "push", "--json", "--allow-damaged", bad, "--store", url)
	var res []pushResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 1 || res[0].Uploaded == nil || !res[0].Uploaded.Damaged {
		t.Fatalf("push --allow-damaged: %v\n%s", err, out)
	}
	remote := res[0].Uploaded.URL
	good := filepath.Join(t.TempDir(), "twin.jbx")
	b, _ := os.ReadFile(agentRunTape)
	must(t, os.WriteFile(good, b, 0o644))
	out, _ = wantCode(t, 1, "push", good, "--store", url)
	if strings.Contains(out, "already") || !strings.Contains(out, "other bytes") {
		t.Errorf("push of the intact tape over its flipped copy:\n%s", out)
	}
	out, _ = wantCode(t, 3, "verify", remote)
	if !strings.HasPrefix(out, "FAIL") {
		t.Errorf("verify of the flipped copy:\n%s", out)
	}
	into := t.TempDir()
	for range 2 {
		out, _ = wantCode(t, ExitBadTape, "pull", remote, "-o", into)
		if strings.Contains(out, "already here") {
			t.Errorf("pull of the flipped copy:\n%s", out)
		}
	}
	if ents, _ := os.ReadDir(into); len(ents) != 0 {
		t.Errorf("pull kept something of the flipped copy: %v", ents)
	}
}

// TestPushStoreLast: `jukebox push run.jbx URL`, the store given last as
// a copy's destination is, uploads (it said "missing flags: --store=URL",
// having taken the URL for a tape's path); push without a store names
// both ways to give it, and a URL among the tapes is refused.
func TestPushStoreLast(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	wantCode(t, 0, "record", "-o", tape, "--", "sh", "-c", "echo pushed")
	store := "file://" + filepath.Join(dir, "store") + "/"
	must(t, os.Mkdir(filepath.Join(dir, "store"), 0o755))
	out, _ := wantCode(t, 0, "push", tape, store)
	if !strings.Contains(out, "uploaded "+tape+" to "+store) {
		t.Errorf("push TAPE URL:\n%s", out)
	}
	t.Setenv("JUKEBOX_STORE", "")
	if _, errs := wantCode(t, ExitUsage, "push", tape); !strings.Contains(errs, "--store URL (or $JUKEBOX_STORE), or the URL last") {
		t.Errorf("push without a store:\n%s", errs)
	}
	if _, errs := wantCode(t, ExitUsage, "push", store+"x.jbx", "--store", store); !strings.Contains(errs, "a tape to push is a file here") {
		t.Errorf("push of a URL:\n%s", errs)
	}
}

// TestStoreLsWithABadIndex: one index record of a store that is not JSON
// (damaged, or planted) made ls fail for the whole store and list
// nothing. ls names it, lists the tapes from their summaries, and says
// that reindex writes the index again; reindex does.
func TestStoreLsWithABadIndex(t *testing.T) {
	t.Parallel()
	sc := fileStore(t)
	dir := t.TempDir()
	tape := filepath.Join(dir, "run.jbx")
	wantCode(t, 0, "record", "-o", tape, "--", "sh", "-c", "echo hi")
	wantCode(t, 0, "push", tape, "--store", sc.url)
	store := strings.TrimPrefix(sc.url, "file://")
	must(t, os.WriteFile(filepath.Join(store, ".jukebox", "index", "r", "junk.json"), []byte("garbage"), 0o644))
	out, errs := wantCode(t, 0, "ls", sc.url)
	if !regexp.MustCompile(`run-[0-9a-f]{12}\s`).MatchString(out) || !strings.Contains(errs, "junk.json") || !strings.Contains(errs, "jukebox reindex") {
		t.Errorf("ls of a store with a bad index record:\n%s%s", out, errs)
	}
	wantCode(t, 0, "reindex", sc.url)
	if out, errs = wantCode(t, 0, "ls", sc.url); !regexp.MustCompile(`run-[0-9a-f]{12}\s`).MatchString(out) || errs != "" {
		t.Errorf("ls after reindex:\n%s%s", out, errs)
	}
}

// TestPushWhileRecording: push DIR from cron while an agent records into
// DIR exited 3, calling the live tape torn and advising recover, and ls
// showed it as "no end (torn)". The tape still being written is left for
// a later push, which is no failure, and ls says it is recording.
func TestPushWhileRecording(t *testing.T) {
	t.Parallel()
	sc := fileStore(t)
	dir := t.TempDir()
	tapes := filepath.Join(dir, "tapes")
	wantCode(t, 0, "record", "-o", filepath.Join(tapes, "done.jbx"), "--", "sh", "-c", "echo done")
	rec := jukeboxCmd(t.Context(), dir, "record", "-o", filepath.Join(tapes, "live.jbx"), "--", "sh", "-c", "touch started; while [ ! -e go ]; do sleep 0.05; done")
	must(t, rec.Start())
	defer rec.Process.Kill()
	for _, err := os.Stat(filepath.Join(dir, "started")); err != nil; _, err = os.Stat(filepath.Join(dir, "started")) {
		if t.Context().Err() != nil {
			t.Fatal("the agent never started")
		}
		time.Sleep(10 * time.Millisecond) // polling for the file, within the test's deadline
	}
	out, errs := wantCode(t, 0, "push", tapes, "--store", sc.url)
	if !strings.Contains(out, "live.jbx: still being recorded") || !strings.Contains(out, "uploaded "+filepath.Join(tapes, "done.jbx")) {
		t.Errorf("push during a recording:\n%s%s", out, errs)
	}
	out, _ = wantCode(t, 0, "ls", tapes)
	if !regexp.MustCompile(`live\s.*\brecording\b`).MatchString(out) || strings.Contains(out, "torn") || strings.Contains(out, "DAMAGED") {
		t.Errorf("ls during a recording:\n%s", out)
	}
	must(t, os.WriteFile(filepath.Join(dir, "go"), nil, 0o644))
	must(t, rec.Wait())
	if out, _ = wantCode(t, 0, "push", tapes, "--store", sc.url); !strings.Contains(out, "uploaded "+filepath.Join(tapes, "live.jbx")) {
		t.Errorf("push after the recording:\n%s", out)
	}
}

// TestPushSaysWhyTheStoreTookNothing: a store that refused the
// credentials (403) or whose bucket was not there (404) was reported as
// "the store does not answer", tape by tape.
func TestPushSaysWhyTheStoreTookNothing(t *testing.T) {
	t.Parallel()
	tape := filepath.Join(t.TempDir(), "t.jbx")
	wantCode(t, 0, "record", "-o", tape, "--", "sh", "-c", "echo hi")
	out, errs := wantCode(t, ExitInternal, "push", tape, "--store", "file://"+filepath.Join(t.TempDir(), "nowhere")+"/")
	if !strings.Contains(out, "not tried: the store is not there") || strings.Contains(out+errs, "does not answer") {
		t.Errorf("push to a folder that is not there:\n%s%s", out, errs)
	}
	if got := downReason(errors.New("operation error S3: ListObjectsV2, https response error StatusCode: 403, RequestID: x, api error AccessDenied")); got != "the store refused the credentials" {
		t.Errorf("a 403: %q", got)
	}
}
