//go:build unix

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// replayInterruptAgent asks the model three times, printing each answer's
// length; the third call hangs in the recording.
const replayInterruptAgent = `import json, os, urllib.request
base = os.environ["OPENAI_BASE_URL"]
for i in range(3):
    body = json.dumps({"model": "demo-large", "messages": [{"role": "user", "content": "step %d" % i}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", body, {"Content-Type": "application/json"})
    print("asking", i, flush=True)
    with urllib.request.urlopen(req, timeout=600) as r:
        print("answer", i, len(r.read()), flush=True)
`

// TestReplayOfAnInterruptedRun: a run interrupted (Ctrl-C) while a model
// call hung has that call on its tape as closed by the agent. Its replay
// held the call open for the agent to close again, which it never did
// (seen: a 30-turn Node agent's replay waited 5 minutes for the SDK's
// timeout, then its retries diverged with "never called in the
// recording" and exit 5). The replay now interrupts the agent at that
// call, as the recording was, and says so; --strict passes.
func TestReplayOfAnInterruptedRun(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "hang", "match": {"user": "step 2"}, "fail": {"hang": true}}]}`))
	must(t, err)
	sim, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	defer sim.Close()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(replayInterruptAgent), 0o644))
	tape := filepath.Join(dir, "cut.jbx")
	rec := jukeboxCmd(t.Context(), dir, "record", "-o", tape, "--", py, "agent.py")
	rec.Env = append(rec.Env, "OPENAI_BASE_URL="+sim.OpenAIBaseURL())
	out, err := rec.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	rec.Stderr = &stderr
	must(t, rec.Start())
	lines := bufio.NewScanner(out)
	for lines.Scan() && lines.Text() != "asking 2" {
	}
	// The third request at the model, which holds it.
	for deadline := time.Now().Add(time.Minute); sim.Hits() < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			rec.Process.Kill()
			t.Fatalf("the third request never reached the model (%d did)", sim.Hits())
		}
	}
	must(t, rec.Process.Signal(syscall.SIGINT))
	for lines.Scan() {
	}
	rec.Wait()
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Fatalf("record was not interrupted:\n%s", stderr.String())
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rep := jukeboxCmd(ctx, dir, "replay", "--strict", tape)
	var rout, rerr strings.Builder
	rep.Stdout, rep.Stderr = &rout, &rerr
	err = rep.Run()
	code := rep.ProcessState.ExitCode()
	if ctx.Err() != nil {
		t.Fatalf("the replay hung at the call the recording's interruption cut (%v)\n%s", time.Since(start), rerr.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	if code == ExitDiffers || !strings.Contains(rerr.String(), "the agent interrupted (SIGINT) at call #2, where the recording was") ||
		!strings.Contains(rerr.String(), "stdout identical") {
		t.Errorf("replay --strict: exit %d\n%s", code, rerr.String())
	}
	if !strings.Contains(rout.String(), "asking 2") || strings.Contains(rout.String(), "answer 2") {
		t.Errorf("the replayed agent's output:\n%s", rout.String())
	}
}
