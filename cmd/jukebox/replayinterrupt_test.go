//go:build unix

package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"golang.org/x/sys/unix"
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
	// A SIGTERM (timeout 600 jukebox record ...) or a SIGHUP cut the call
	// too, but the replay held it open: it hung until the agent's own
	// timeout. It now stops the agent with the recording's signal.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			t.Parallel()
			replayOfAStoppedRun(t, sig)
		})
	}
}

func replayOfAStoppedRun(t *testing.T, sig syscall.Signal) {
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
	must(t, rec.Process.Signal(sig))
	for lines.Scan() {
	}
	rec.Wait()
	recorded := rec.ProcessState.ExitCode()
	if sig == syscall.SIGINT && !strings.Contains(stderr.String(), "interrupted") {
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
	want := "the agent interrupted (" + unix.SignalName(sig) + ") at call #2, where the recording was"
	if code == ExitDiffers || code != recorded || !strings.Contains(rerr.String(), want) || !strings.Contains(rerr.String(), "stdout identical") {
		t.Errorf("replay --strict: exit %d (recorded %d)\n%s", code, recorded, rerr.String())
	}
	if !strings.Contains(rout.String(), "asking 2") || strings.Contains(rout.String(), "answer 2") {
		t.Errorf("the replayed agent's output:\n%s", rout.String())
	}
}

// streamAgent prints each streamed delta as it comes.
const streamAgent = `import json, os, sys, urllib.request
body = json.dumps({"model": "demo-large", "stream": True, "messages": [{"role": "user", "content": "count slowly"}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, {"Content-Type": "application/json"})
with urllib.request.urlopen(req) as r:
    for line in r:
        if line.startswith(b"data: {"):
            for c in json.loads(line[6:])["choices"]:
                sys.stdout.write(c["delta"].get("content") or "")
                sys.stdout.write("|\n")
                sys.stdout.flush()
`

// streamRecording is a jukebox record, not started, of streamAgent
// against a scripted model that streams an answer in small chunks 80 ms
// apart, writing name in a new folder (returned).
func streamRecording(t *testing.T, name string) (string, *exec.Cmd) {
	t.Helper()
	py := testenv.RequirePython(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "slow", "chunk_size": 3, "delay_ms": 80,
		"reply": {"text": "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"}}]}`))
	must(t, err)
	sim, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	t.Cleanup(func() { sim.Close() })
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(streamAgent), 0o644))
	rec := jukeboxCmd(t.Context(), dir, "record", "-o", filepath.Join(dir, name), "--", py, "agent.py")
	rec.Env = append(rec.Env, "OPENAI_BASE_URL="+sim.OpenAIBaseURL())
	return dir, rec
}

// TestReplayOfARunStoppedMidStream: Ctrl-C while an answer streamed; the
// recording's agent printed the part it had. The replay interrupted its
// agent as soon as it had written that part, before the agent read it:
// replay --strict failed on every such tape (stdout "(end of output)").
func TestReplayOfARunStoppedMidStream(t *testing.T) {
	t.Parallel()
	dir, rec := streamRecording(t, "cut.jbx")
	tape := filepath.Join(dir, "cut.jbx")
	out, err := rec.StdoutPipe()
	must(t, err)
	rec.Stderr = io.Discard
	must(t, rec.Start())
	lines := bufio.NewScanner(out)
	for n := 0; n < 4 && lines.Scan(); n++ {
	}
	must(t, rec.Process.Signal(syscall.SIGINT))
	for lines.Scan() {
	}
	rec.Wait()
	for range 3 { // it failed every time
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		rep := jukeboxCmd(ctx, dir, "replay", "--strict", tape)
		var rerr strings.Builder
		rep.Stdout, rep.Stderr = io.Discard, &rerr
		rep.Run()
		cancel()
		if code := rep.ProcessState.ExitCode(); code == ExitDiffers || !strings.Contains(rerr.String(), "stdout identical") {
			t.Fatalf("replay --strict: exit %d\n%s", code, rerr.String())
		}
	}
}

// TestStrictReplayInterruptedIs130: Ctrl-C on replay --strict exited 6,
// "the agent ended otherwise (killed by SIGINT)", where an interrupt is
// 130 (replay without --strict said so).
func TestStrictReplayInterruptedIs130(t *testing.T) {
	t.Parallel()
	dir, rec := streamRecording(t, "whole.jbx")
	tape := filepath.Join(dir, "whole.jbx")
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	rep := jukeboxCmd(t.Context(), dir, "replay", "--strict", "--speed", "realtime", tape)
	out, err := rep.StdoutPipe()
	must(t, err)
	var rerr strings.Builder
	rep.Stderr = &rerr
	must(t, rep.Start())
	lines := bufio.NewScanner(out)
	for n := 0; n < 3 && lines.Scan(); n++ {
	}
	must(t, rep.Process.Signal(syscall.SIGINT))
	for lines.Scan() {
	}
	rep.Wait()
	if code := rep.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Errorf("replay --strict interrupted: exit %d, want %d\n%s", code, ExitInterrupted, rerr.String())
	}
}
