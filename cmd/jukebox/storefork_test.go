package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapestore"
)

// oneCallAgent is a Python agent (standard library) that makes one
// chat completion of demo-large at OPENAI_BASE_URL.
const oneCallAgent = `import json, os, urllib.request
body = json.dumps({"model": "demo-large", "messages": [{"role": "user", "content": "hi"}]}).encode()
urllib.request.urlopen(urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"Content-Type": "application/json"})).read()
`

// TestForkOfAStoreTapeNamesItsURL: a fork of a tape opened from a store
// recorded the forker's cache copy of it as its parent's path
// (~/.cache/jukebox/store/objects/...), which went up to the store with
// the fork: pack failed for every teammate, and for the forker after
// cache prune. The parent is named by its URL.
func TestForkOfAStoreTapeNamesItsURL(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	sc := fileStore(t)
	dir := t.TempDir()
	cache := filepath.Join(t.TempDir(), "cache")
	run := func(args ...string) string {
		t.Helper()
		cmd := jukeboxCmd(t.Context(), dir, args...)
		cmd.Env = append(cmd.Env, "JUKEBOX_CACHE_DIR="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("jukebox %s: %v\n%s", args[0], err, out)
		}
		return string(out)
	}
	run("record", "--upstream", "openai="+srv.OpenAIBaseURL(), "--store", sc.url, "-o", "parent.jbx", "--", py, "-c", oneCallAgent)
	var listed []tapestore.Entry
	must(t, json.Unmarshal([]byte(run("ls", "--json", sc.url)), &listed))
	if len(listed) != 1 {
		t.Fatalf("the store lists %d tapes", len(listed))
	}
	parent := listed[0].URL
	run("fork", "--no-booth", "--frame", "1", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "fork.jbx", parent)
	tp := openTape(t, filepath.Join(dir, "fork.jbx"))
	start, err := tp.Frame(0)
	tp.Close()
	must(t, err)
	if !strings.Contains(string(start.Payload), `"path":"`+parent+`"`) {
		t.Errorf("the fork names its parent otherwise than by its URL %s: %s", parent, start.Payload)
	}
	must(t, os.RemoveAll(cache)) // another machine, or after cache prune
	if out := run("pack", "fork.jbx", "-o", "packed.jbx"); !strings.Contains(out, "the parent's prefix included") {
		t.Errorf("pack:\n%s", out)
	}
}
