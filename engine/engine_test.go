package engine_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/demo"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
	"github.com/jukebox-os/jukebox/timeline"
)

// secretKey is the API key every test run uses; no tape may contain it.
const secretKey = "sk-test-SECRET-0123456789abcdef"

// agentRun is one agent recorded and replayed.
type agentRun struct {
	argv   []string
	env    []string
	dir    string
	stdout bytes.Buffer
}

func startModel(t *testing.T, script *llmsim.Script) *llmsim.Server {
	t.Helper()
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func record(t *testing.T, srv *llmsim.Server, run *agentRun, tape string) *engine.Result {
	t.Helper()
	var stderr bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &run.stdout, Stderr: &stderr, Name: "test"},
		Tape:       tape,
		Upstreams:  map[string]string{"openai": srv.OpenAIBaseURL(), "anthropic": srv.AnthropicBaseURL()},
	})
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	if res.End.ExitCode != 0 {
		t.Fatalf("recorded agent exited %d: %s\nstderr: %s", res.End.ExitCode, res.End.Error, stderr.String())
	}
	checkTape(t, tape)
	return res
}

// checkTape verifies a tape in full and scans it for the API key.
func checkTape(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secretKey)) || bytes.Contains(raw, []byte("SECRET-0123")) {
		t.Fatalf("%s holds the API key", path)
	}
	tapetest.Verify(t, path)
	tapetest.NoSecrets(t, path, secretKey, "SECRET-0123") // in payloads and blobs, decoded
}

func replay(t *testing.T, run *agentRun, from string, env []string) (*engine.Result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: env, Stdout: &stdout, Stderr: &stderr, QuietSDKs: true},
		From:       from,
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return res, stdout.String()
}

func pythonAgent(t *testing.T, model string) *agentRun {
	t.Helper()
	dir := t.TempDir()
	path, err := demo.WriteAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &agentRun{argv: []string{testenv.RequirePython(t), path}, dir: dir,
		env: append(cleanEnv(), "AGENT_MODEL="+model, "OPENAI_API_KEY="+secretKey)}
}

// cleanEnv is the test's environment without the developer's provider settings.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") {
			env = append(env, kv)
		}
	}
	return env
}

func TestRecordReplayPythonAgent(t *testing.T) {
	t.Parallel()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	tape := filepath.Join(t.TempDir(), "run.jbx")
	res := record(t, srv, run, tape)
	if res.Calls != 6 {
		t.Fatalf("recorded %d calls, want 6", res.Calls)
	}
	poem, err := os.ReadFile(filepath.Join(run.dir, "poem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	summary := summarize(t, tape)
	if summary.Calls != 6 || summary.Usage.Input == 0 || summary.Usage.Output == 0 || summary.Exit == nil {
		t.Fatalf("summary %+v", summary)
	}

	// Replay with the model gone: every answer must come from the tape.
	srv.Close()
	hits := srv.Hits()
	os.Remove(filepath.Join(run.dir, "poem.txt"))
	rres, out := replay(t, run, tape, append(cleanEnv(), "AGENT_MODEL=demo-large"))
	if rres.Divergence != nil || rres.End.ExitCode != 0 {
		t.Fatalf("replay diverged or failed: %+v %v", rres.End, rres.Divergence)
	}
	if out != run.stdout.String() || rres.OutputSame == nil || !*rres.OutputSame {
		t.Fatalf("replay printed\n%s\nrecording printed\n%s", out, run.stdout.String())
	}
	again, _ := os.ReadFile(filepath.Join(run.dir, "poem.txt"))
	if !bytes.Equal(again, poem) || srv.Hits() != hits || rres.Unused != 0 {
		t.Fatalf("replay wrote %q (recorded %q), model hits %d→%d, unused %d", again, poem, hits, srv.Hits(), rres.Unused)
	}
}

func TestReplayReportsDivergence(t *testing.T) {
	t.Parallel()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	tape := filepath.Join(t.TempDir(), "run.jbx")
	record(t, srv, run, tape)
	// The same agent asking another model diverges at its first request.
	res, _ := replay(t, run, tape, append(cleanEnv(), "AGENT_MODEL=demo-small"))
	d := res.Divergence
	if d == nil {
		t.Fatal("no divergence reported")
	}
	if d.Frame != 1 || d.Endpoint != "POST /v1/chat/completions" {
		t.Fatalf("divergence at frame %d on %s, want frame 1", d.Frame, d.Endpoint)
	}
	if !strings.Contains(d.Diff, `-  "model": "demo-large"`) || !strings.Contains(d.Diff, `+  "model": "demo-small"`) {
		t.Fatalf("diff does not show the model change:\n%s", d.Diff)
	}
	if res.End.ExitCode == 0 {
		t.Fatal("the agent should have failed on the divergence")
	}
}

func summarize(t *testing.T, path string) timeline.Summary {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	s, err := timeline.Summarize(path, tp)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReplayGoesLiveOnDivergence: with Live, the calls from the first
// divergence on go to the upstream and the replayed run is recorded.
func TestReplayGoesLiveOnDivergence(t *testing.T) {
	t.Parallel()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	tape := filepath.Join(t.TempDir(), "run.jbx")
	record(t, srv, run, tape)
	hits := srv.Hits()
	out := filepath.Join(t.TempDir(), "episodes.jbx")
	var stdout bytes.Buffer
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: append(cleanEnv(), "AGENT_MODEL=demo-small"), Stdout: &stdout, Stderr: &stdout},
		From:       tape, Tape: out, Live: true, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Divergence == nil || res.End.ExitCode != 0 || srv.Hits()-hits != 6 {
		t.Fatalf("exit %d, divergence %v, live calls %d; want a divergence and 6 live calls\n%s", res.End.ExitCode, res.Divergence, srv.Hits()-hits, stdout.String())
	}
	checkTape(t, out)
	if s := summarize(t, out); s.Calls != 6 || !strings.Contains(stdout.String(), "(demo-small)") {
		t.Fatalf("recorded %d calls; agent printed\n%s", s.Calls, stdout.String())
	}
}

// TestArgvSecretsNeverWritten: a key passed on the agent's command line
// does not reach the tape.
func TestArgvSecretsNeverWritten(t *testing.T) {
	t.Parallel()
	tape := filepath.Join(t.TempDir(), "argv.jbx")
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{testenv.RequirePython(t), "-c", "import sys; print(len(sys.argv))", "--api-key", secretKey, "--token=" + secretKey},
			Env: cleanEnv(), Stdout: io.Discard, Stderr: io.Discard},
		Tape: tape})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, %+v", err, res)
	}
	checkTape(t, tape)
}
