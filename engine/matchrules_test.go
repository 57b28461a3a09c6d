package engine_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// recordMatchAgent records testdata/agents/match_agent.mjs in mode.
func recordMatchAgent(t *testing.T, mode string, opts ...llmsim.Option) (*agentRun, string) {
	t.Helper()
	agents := testenv.RequireNode(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", llmsim.DefaultScript(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "AGENT_MODE="+mode, "OPENAI_API_KEY="+secretKey)
	run := &agentRun{argv: []string{"node", filepath.Join(agents, "match_agent.mjs")}, dir: t.TempDir(), env: env}
	tape := filepath.Join(t.TempDir(), mode+".jbx")
	record(t, srv, run, tape)
	srv.Close()
	return run, tape
}

// replayWith replays the tape under rules (nil: the defaults and the
// tape's remembered rules).
func replayWith(t *testing.T, run *agentRun, tape string, rules *reqmatch.Rules) (*engine.Result, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := append(cleanEnv(), "AGENT_MODE="+strings.TrimSuffix(filepath.Base(tape), ".jbx"))
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: env, Stdout: &stdout, Stderr: &stderr},
		From:       tape, Rules: rules,
	})
	return res, stdout.String(), err
}

func compiledRules(t *testing.T, r reqmatch.Rules) *reqmatch.Rules {
	t.Helper()
	r = reqmatch.Default().Merge(r)
	if err := r.Compile(); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestReplayScrubsATimestamp: a prompt that holds the time and a uuid
// diverges on replay, naming the field; scrubbing both replays it, and
// an ignore path that names nothing on the tape is refused.
func TestReplayScrubsATimestamp(t *testing.T) {
	t.Parallel()
	run, tape := recordMatchAgent(t, "timestamp")
	res, _, err := replayWith(t, run, tape, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence == nil || res.Divergence.Path != "messages.0.content" {
		t.Fatalf("replay without rules: divergence %+v, want one at messages.0.content", res.Divergence)
	}
	rules := compiledRules(t, reqmatch.Rules{Scrub: []reqmatch.Scrub{
		{Pattern: `\d{4}-\d\d-\d\dT[\d:.]+Z`, With: "<time>"},
		{Pattern: `[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}`, With: "<uuid>"}}})
	res, out, err := replayWith(t, run, tape, rules)
	if err != nil || res.Divergence != nil || out != run.stdout.String() {
		t.Fatalf("replay with scrubs: err %v, divergence %v, output %q want %q", err, res.Divergence, out, run.stdout.String())
	}
	ignored := compiledRules(t, reqmatch.Rules{Ignore: []string{"messages.*.content"}})
	if res, _, err = replayWith(t, run, tape, ignored); err != nil || res.Divergence != nil {
		t.Fatalf("replay ignoring messages.*.content: %v %v", err, res.Divergence)
	}
	typo := compiledRules(t, reqmatch.Rules{Ignore: []string{"messages.*.contnt"}})
	_, _, err = replayWith(t, run, tape, typo)
	var ie *engine.IgnoreError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "messages.*.contnt") || !strings.Contains(err.Error(), "content") {
		t.Fatalf("an ignore path matching nothing: %v", err)
	}
}

// TestReplayRemembersRules: rules kept in the tape's sidecar folder apply
// to a replay that names none.
func TestReplayRemembersRules(t *testing.T) {
	t.Parallel()
	run, tape := recordMatchAgent(t, "timestamp")
	kept := reqmatch.Rules{Ignore: []string{"messages.0.content"}}
	if err := kept.Remember(sidecar.Dir(tape)); err != nil {
		t.Fatal(err)
	}
	if res, _, err := replayWith(t, run, tape, nil); err != nil || res.Divergence != nil {
		t.Fatalf("replay with remembered rules: %v %v", err, res.Divergence)
	}
}

// TestReplayMultipartUpload: the openai SDK's files.create sends a
// multipart body with a random boundary; replay compares it part by part.
func TestReplayMultipartUpload(t *testing.T) {
	t.Parallel()
	run, tape := recordMatchAgent(t, "files")
	if !strings.Contains(run.stdout.String(), "file: file-") {
		t.Fatalf("recording: %q", run.stdout.String())
	}
	res, out, err := replayWith(t, run, tape, nil)
	if err != nil || res.Divergence != nil || out != run.stdout.String() {
		t.Fatalf("replay: err %v, divergence %v, output %q want %q", err, res.Divergence, out, run.stdout.String())
	}
}

// TestReplayParallelIdenticalCalls: 20 identical streamed calls at once,
// answered differently (a sampling model), each caller keeps its answer on
// replay; and the fan-out is one step on the tape.
func TestReplayParallelIdenticalCalls(t *testing.T) {
	t.Parallel()
	run, tape := recordMatchAgent(t, "parallel", llmsim.WithSampling())
	ids := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(run.stdout.String()), "\n") {
		ids[strings.Fields(line)[2]] = true
	}
	if len(ids) != 20 {
		t.Fatalf("the model gave %d distinct answers to 20 calls; the test needs 20:\n%s", len(ids), run.stdout.String())
	}
	for i := range 3 {
		res, out, err := replayWith(t, run, tape, nil)
		if err != nil || res.Divergence != nil || out != run.stdout.String() {
			t.Fatalf("replay %d: err %v, divergence %v, output\n%s\nwant\n%s", i, err, res.Divergence, out, run.stdout.String())
		}
	}
	if steps := stepFrames(t, tape); steps > 1 {
		t.Errorf("a fan-out of 20 parallel calls wrote %d step boundaries, want at most 1 (the run's end)", steps)
	}
}

func stepFrames(t *testing.T, path string) int {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	n := 0
	for _, err := range tp.Frames(tapefmt.KindStep) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestReplayLiveCountsServed: with --on-divergence live, calls that went
// to the upstream are not counted as served from the tape.
func TestReplayLiveCountsServed(t *testing.T) {
	t.Parallel()
	run, tape := recordMatchAgent(t, "timestamp")
	srv, _, err := llmsim.Start("127.0.0.1:0", llmsim.DefaultScript())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: append(cleanEnv(), "AGENT_MODE=timestamp", "OPENAI_API_KEY="+secretKey),
			Stdout: &stdout, Stderr: &stderr},
		From: tape, Tape: filepath.Join(t.TempDir(), "live.jbx"), Live: true,
		Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence == nil || res.Calls != 1 || res.Served == nil || *res.Served != 0 || res.Unused != 1 {
		t.Fatalf("calls %d, served %v, unused %d, divergence %v; want 1 call, 0 served, 1 unused, a divergence", res.Calls, res.Served, res.Unused, res.Divergence)
	}
	if res.ExitSame == nil || !*res.ExitSame {
		t.Errorf("exit same: %v", res.ExitSame)
	}
}
