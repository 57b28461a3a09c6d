package engine_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// sequentialAgent makes N model calls one after another with urllib, a
// new connection each, not streamed.
const sequentialAgent = `import json, os, sys, urllib.request
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
for i in range(int(sys.argv[1])):
    body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": "step %d" % i}]}).encode()
    req = urllib.request.Request(url, body, {"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    urllib.request.urlopen(req).read()
`

// TestResponseFrameBeforeTheNextRequest is issue 31's "for sequential,
// non-streamed Python clients, 1-4% of calls have the next request
// written before the previous response": the agent has a whole answer
// only once its frame is on the tape, so on the tape of a sequential
// agent each call's response comes before the next call's request, and
// step counts are the same run to run.
func TestResponseFrameBeforeTheNextRequest(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", llmsim.DefaultScript())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const calls = 300
	run := &agentRun{argv: []string{py, "-c", sequentialAgent, fmt.Sprint(calls)}, dir: t.TempDir(), env: cleanEnv()}
	tape := filepath.Join(t.TempDir(), "seq.jbx")
	record(t, srv, run, tape)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	answered := map[uint64]bool{}
	requests, misplaced := 0, 0
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch v := p.(type) {
		case *tapefmt.LLMRequest:
			requests++
			if v.Call > 0 && !answered[v.Call-1] {
				misplaced++
			}
		case *tapefmt.LLMResponse:
			answered[v.Call] = true
		}
	}
	if requests != calls || misplaced > 0 {
		t.Errorf("%d requests (want %d); %d written before the answer to the call before them", requests, calls, misplaced)
	}
}
