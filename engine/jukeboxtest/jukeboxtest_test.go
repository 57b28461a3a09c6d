package jukeboxtest_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/engine/jukeboxtest"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// agent asks the model $PROMPT and prints the answer.
const agent = `import json, os, urllib.request
body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": os.environ["PROMPT"]}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
`

// recorder is a testing.TB that keeps what the helper reports instead of
// failing the test that uses it.
type recorder struct {
	*testing.T
	failed bool
	msgs   strings.Builder
}

func (r *recorder) Errorf(f string, a ...any) { r.failed = true; fmt.Fprintf(&r.msgs, f+"\n", a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...) }

// TestReplay is issue 34's Go helper: a tape recorded against the scripted
// model replays under go test with no model there; an agent that asks
// something else fails the test with the divergence and its frame; a tape
// that is not there fails naming where it was looked for.
func TestReplay(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.py")
	if err := os.WriteFile(script, []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(dir, "ask.jbx")
	var out bytes.Buffer
	res, err := engine.Record(t.Context(), engine.RecordOptions{Tape: tape,
		RunOptions: engine.RunOptions{Argv: []string{py, script}, Env: append(os.Environ(), "PROMPT=hello"), Stdout: &out, Stderr: &out},
		Upstreams:  map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, %+v\n%s", err, res, out.String())
	}
	srv.Close()

	got := jukeboxtest.Replay(t, tape, jukeboxtest.Env(append(os.Environ(), "PROMPT=hello")...))
	if got == nil || got.Calls != 1 {
		t.Fatalf("replay: %+v", got)
	}
	r := &recorder{T: t}
	jukeboxtest.Replay(r, tape, jukeboxtest.Env(append(os.Environ(), "PROMPT=goodbye")...))
	if !r.failed || !strings.Contains(r.msgs.String(), "replay diverged at frame") || !strings.Contains(r.msgs.String(), "messages.0.content") {
		t.Fatalf("an agent that asks something else did not fail the test with its divergence:\n%s", r.msgs.String())
	}
	r = &recorder{T: t}
	jukeboxtest.Replay(r, "no-such.jbx")
	if !r.failed || !strings.Contains(r.msgs.String(), jukeboxtest.TapesDir) {
		t.Fatalf("a missing tape: %s", r.msgs.String())
	}
}
