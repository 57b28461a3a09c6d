package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRecordSaysWhatTheTapeCouldNotHold: an answer body over the tape's
// 256 MiB blob limit was noted on its frame alone ("; tapefmt: blob of
// ... exceeds"), the run said recorded with exit 0, and its replay
// answered 200 with no body. The run now ends with exit 3 naming it.
func TestRecordSaysWhatTheTapeCouldNotHold(t *testing.T) {
	py := testenv.RequirePython(t)
	big := make([]byte, tapefmt.MaxBlobSize+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) }))
	defer srv.Close()
	dir := t.TempDir()
	t.Chdir(dir)
	must(t, os.WriteFile(filepath.Join(dir, "get.py"), []byte(`
import os, urllib.request
print(len(urllib.request.urlopen(os.environ["URL"]).read()))
`), 0o644))
	t.Setenv("URL", srv.URL+"/big.bin")
	out, errs := wantCode(t, ExitBadTape, "record", "-o", "big.jbx", "--", py, "get.py")
	if !strings.Contains(out, "268435457") || !strings.Contains(errs, "the answer body of http://") || !strings.Contains(errs, "268435457 bytes; a replay could not give it") {
		t.Errorf("record of an answer the tape cannot hold:\nstdout %s\nstderr %s", out, errs)
	}
	show, _ := wantCode(t, ExitOK, "show", "--json", "--kind", "http.response", "big.jbx")
	if strings.Contains(show, `"; tapefmt`) {
		t.Errorf("the frame's error begins with a bare separator:\n%s", show)
	}
}
