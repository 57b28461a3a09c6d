package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// streamClient streams one chat completion and prints what it received and
// how it ended, so record and replay can be compared.
const streamClient = `
import json, os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "tell me"}]}).encode(),
    headers={"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
got = b""
try:
    with urllib.request.urlopen(req) as r:
        while True:
            b = r.read1(65536)
            if not b:
                break
            got += b
    print("complete", len(got))
except urllib.error.HTTPError as e:
    print("http", e.code)
except Exception as e:
    print("broken after", len(got), "bytes:", type(e).__name__)
`

// TestUpstreamFailuresRecordedAndReplayed: an HTTP error and a connection
// reset mid-stream are recorded as they happened, and replay plays them
// back so that the agent sees the same thing. Neither is a call that never
// reached its upstream (the run's note of those advised --upstream for a
// reset after a 200).
func TestUpstreamFailuresRecordedAndReplayed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, fail, want, respErr string }{
		{"reset mid-stream", `{"reset_after_chunks": 3}`, "broken after", "reset"},
		{"http 500", `{"status": 500, "message": "upstream down"}`, "http 500", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			script, err := llmsim.ParseScript([]byte(`{"version":1,"rules":[{"reply":{"text":"one two three four five six seven"},"fail":` + c.fail + `}]}`))
			if err != nil {
				t.Fatal(err)
			}
			srv := startModel(t, script)
			run := &agentRun{argv: []string{testenv.RequirePython(t), "-c", streamClient}, dir: t.TempDir(),
				env: append(cleanEnv(), "OPENAI_API_KEY="+secretKey)}
			tape := filepath.Join(t.TempDir(), "fail.jbx")
			rec := record(t, srv, run, tape)
			if rec.LiveFailed != 0 {
				t.Errorf("recording: %d calls counted as never reaching the upstream (%s)", rec.LiveFailed, rec.LiveError)
			}
			if !strings.HasPrefix(run.stdout.String(), c.want) {
				t.Fatalf("recording: agent printed %q, want %q", run.stdout.String(), c.want)
			}
			resp := lastResponse(t, tape)
			if !strings.Contains(resp.Error, c.respErr) {
				t.Fatalf("recorded response error %q, want %q", resp.Error, c.respErr)
			}
			srv.Close()
			res, out := replay(t, run, tape, cleanEnv())
			if out != run.stdout.String() || res.Divergence != nil {
				t.Fatalf("replay printed %q, recording %q (divergence %v)", out, run.stdout.String(), res.Divergence)
			}
		})
	}
}

func lastResponse(t *testing.T, path string) *tapefmt.LLMResponse {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var last *tapefmt.LLMResponse
	for f, err := range tp.Frames(tapefmt.KindLLMResponse) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		last = p.(*tapefmt.LLMResponse)
	}
	if last == nil {
		t.Fatal("no response on the tape")
	}
	return last
}

// timeoutClient gives up on a call after one second, as SDK timeouts do.
const timeoutClient = `
import json, os, socket, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "tell me"}]}).encode(),
    headers={"Content-Type": "application/json"})
try:
    urllib.request.urlopen(req, timeout=1).read()
    print("answered")
except (socket.timeout, TimeoutError) as e:
    print("timed out")
except Exception as e:
    print("other:", type(e).__name__, e)
`

// TestClientTimeoutReplaysAsATimeout: an upstream that hangs makes the
// agent time out; replay keeps the agent waiting so that it times out again
// rather than seeing a reset.
func TestClientTimeoutReplaysAsATimeout(t *testing.T) {
	t.Parallel()
	script, err := llmsim.ParseScript([]byte(`{"version":1,"rules":[{"reply":{"text":"x"},"fail":{"hang":true}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, script)
	run := &agentRun{argv: []string{testenv.RequirePython(t), "-c", timeoutClient}, dir: t.TempDir(), env: append(cleanEnv(), "OPENAI_API_KEY="+secretKey)}
	tape := filepath.Join(t.TempDir(), "timeout.jbx")
	record(t, srv, run, tape)
	if got := strings.TrimSpace(run.stdout.String()); got != "timed out" {
		t.Fatalf("recording: agent printed %q", got)
	}
	if resp := lastResponse(t, tape); resp.Status != 0 || !strings.Contains(resp.Error, "agent closed") {
		t.Fatalf("recorded %d %q", resp.Status, resp.Error)
	}
	srv.Close()
	if _, out := replay(t, run, tape, cleanEnv()); strings.TrimSpace(out) != "timed out" {
		t.Fatalf("replay: agent printed %q", out)
	}
}
