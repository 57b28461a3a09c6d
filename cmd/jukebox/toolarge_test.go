package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestRequestTooLarge: jukebox holds a request body whole, up to 64 MiB.
// Seen: a 70 MB upload got a 413 saying "http: request body too large",
// the server never saw it, and nothing on the tape or after the run said
// that jukebox had refused it. The 413 names the limit, and the run ends
// with a note naming the request; a small request beside it goes through.
func TestRequestTooLarge(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("got it")) }))
	defer srv.Close()
	dir := t.TempDir()
	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	must(t, err)
	must(t, f.Truncate(engine.MaxRequestBody+1))
	must(t, f.Close())
	code, out, errs := jb(t, "record", "-o", filepath.Join(dir, "run.jbx"), "--json", "--", "sh", "-c",
		`curl -sS --data-binary @"$1" "$2/up"; echo; curl -sS -d small "$2/small"`, "agent", big, srv.URL)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(errs, "over the 64 MiB jukebox holds of a request") || !strings.Contains(errs, "got it") && !strings.Contains(out, "got it") {
		t.Errorf("the agent's output:\n%s", errs)
	}
	if !strings.Contains(errs, "jukebox: note: 1 requests of the agent were refused (413)") || !strings.Contains(errs, "POST http://"+strings.TrimPrefix(srv.URL, "http://")+"/up") {
		t.Errorf("no note naming the refused request:\n%s", errs)
	}
	if !strings.Contains(out, `"requests_too_large": 1`) {
		t.Errorf("--json: %s", out)
	}
}
