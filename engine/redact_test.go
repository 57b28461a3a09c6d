package engine_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRedactSecrets records an agent (the official openai SDK, streamed)
// that handles secrets everywhere they were seen reaching the tape: flags
// (-k VALUE, --bearer=VALUE), a header inside an argument, an
// OPENAI_BASE_URL with user info and ?key=, and, named by --redact, a
// prompt, the model's answer that repeats it, and the agent's output. No
// secret may be on the tape or on the tape of its replay, and the replay,
// its live requests masked alike, still matches the recording.
func TestRedactSecrets(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "echo", "reply": {"text": "noted: {{user}}"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := startModel(t, script)
	const card, plant = "4111-1111-1111-1111", "ZX-PLANT-77"
	patterns := []string{`ZX-PLANT-\d+`, `4111(-\d{4}){3}`}
	secrets := []string{"ARGSECRET1", "ARGSECRET2", "ARGSECRET3xyzw", "URLSECRET4", "URLKEY5", plant, card, secretKey}
	argv := []string{"node", filepath.Join(agents, "secret_agent.mjs"), "--bearer=ARGSECRET1", "-k", "ARGSECRET2",
		"Authorization: Bearer ARGSECRET3xyzw"}
	env := append(cleanEnv(), "OPENAI_API_KEY="+secretKey, "PROMPT=charge card "+card+" for order "+plant, "PLANT="+plant,
		"OPENAI_BASE_URL=http://bob:URLSECRET4@127.0.0.1:9/v1?key=URLKEY5")
	dir, tape := t.TempDir(), filepath.Join(t.TempDir(), "secret.jbx")
	var out, errs bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: env, Stdout: &out, Stderr: &errs, Redact: patterns},
		Tape:       tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, exit %d\n%s%s", err, res.End.ExitCode, out.String(), errs.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("noted: charge card "+card)) || !bytes.Contains(out.Bytes(), []byte("plant: "+plant)) {
		t.Fatalf("the agent did not handle its secrets as the test plants them:\n%s", out.String())
	}
	tapetest.Verify(t, tape)
	tapetest.NoSecrets(t, tape, secrets...)
	start := runStartOf(t, tape)
	if !slices.Equal(start.Redact, patterns) {
		t.Errorf("run.start redact = %q, want the patterns %q", start.Redact, patterns)
	}

	// Replay without a command: the recorded one lost its secrets.
	_, err = engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Dir: dir, Env: cleanEnv(), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, From: tape})
	var rc *engine.RedactedCommandError
	if !errors.As(err, &rc) || rc.Index != 2 {
		t.Fatalf("replay of a command with redacted arguments: %v, want a RedactedCommandError at argument 2", err)
	}

	// Replay with the command: served from the tape, the agent's live
	// requests (holding the secrets) masked before they are matched.
	replayTape := filepath.Join(t.TempDir(), "replay.jbx")
	var rout bytes.Buffer
	rres, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: argv, Dir: dir, Env: env, Stdout: &rout, Stderr: &errs}, From: tape, Tape: replayTape})
	if err != nil || rres.Divergence != nil || rres.End.ExitCode != 0 {
		t.Fatalf("replay: %v, divergence %v, exit %d\n%s", err, rres.Divergence, rres.End.ExitCode, errs.String())
	}
	if rres.OutputSame == nil || !*rres.OutputSame {
		t.Errorf("replay's output differs from the (masked) recording:\n%s", rout.String())
	}
	tapetest.Verify(t, replayTape)
	tapetest.NoSecrets(t, replayTape, secrets...)
	if got := runStartOf(t, replayTape).Redact; !slices.Equal(got, patterns) {
		t.Errorf("the replay's tape redacts %q, want the recording's %q", got, patterns)
	}
}

// runStartOf is the tape's first run.start.
func runStartOf(t *testing.T, path string) *tapefmt.RunStart {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	start, err := engine.FirstRunStart(tp)
	if err != nil {
		t.Fatal(err)
	}
	return start
}
