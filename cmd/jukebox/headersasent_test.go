package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// rawAgent asks TARGET through jukebox's forward proxy with http.client,
// which sends no User-Agent, and prints what the server saw and the
// answer's Date and Content-Type.
const rawAgent = `import http.client, os, urllib.parse
p = urllib.parse.urlsplit(os.environ["HTTP_PROXY"])
c = http.client.HTTPConnection(p.hostname, p.port)
c.request("GET", os.environ["TARGET"])
r = c.getresponse()
print(r.read().decode(), "date", r.getheader("Date"), "type", r.getheader("Content-Type"))
`

// TestHeadersAsSent: a server that sent no Date (nor Content-Type) got one from jukebox's
// proxy, a new one in each replay (replay --strict failed on any agent
// that printed it); a request with no User-Agent reached the server with
// Go's own.
func TestHeadersAsSent(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"], w.Header()["Content-Type"] = nil, nil
		fmt.Fprintf(w, "ua=%q", r.Header.Values("User-Agent"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	tape := filepath.Join(dir, "raw.jbx")
	env := []string{"TARGET=" + srv.URL + "/page"}
	out, errs, code := jbIn(dir, env, "record", "-o", tape, "--", py, "-c", rawAgent)
	if code != ExitOK || strings.TrimSpace(out) != "ua=[] date None type None" {
		t.Fatalf("record: exit %d, output %q\n%s", code, out, errs)
	}
	srv.Close()
	if out, errs, code = jbIn(dir, env, "replay", "--strict", tape); code != ExitOK || strings.TrimSpace(out) != "ua=[] date None type None" {
		t.Fatalf("replay --strict: exit %d, output %q\n%s", code, out, errs)
	}
}
