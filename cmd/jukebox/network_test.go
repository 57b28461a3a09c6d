package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestQuietSDKs: replay switches the SDKs' own traces and telemetry off in
// the agent's environment; record does so only with --quiet-sdks.
func TestQuietSDKs(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "env.jbx")
	show := "echo tracing=$OPENAI_AGENTS_DISABLE_TRACING langchain=$LANGCHAIN_TRACING_V2 otel=$OTEL_SDK_DISABLED"
	t.Setenv("LANGCHAIN_TRACING_V2", "true") // the user's own setting, which replay overrides
	out, _ := wantCode(t, ExitOK, "record", "-o", tape, "--", "sh", "-c", show)
	if !strings.Contains(out, "tracing= langchain=true otel=") {
		t.Errorf("record without --quiet-sdks changed the environment: %q", out)
	}
	out, _ = wantCode(t, ExitOK, "record", "--quiet-sdks", "-o", filepath.Join(dir, "q.jbx"), "--", "sh", "-c", show)
	if !strings.Contains(out, "tracing=1 langchain=false otel=true") {
		t.Errorf("record --quiet-sdks: %q", out)
	}
	out, _ = wantCode(t, ExitOK, "replay", tape)
	if !strings.Contains(out, "tracing=1 langchain=false otel=true") {
		t.Errorf("replay: %q", out)
	}
	out, _ = wantCode(t, ExitOK, "replay", "--no-quiet-sdks", tape)
	if !strings.Contains(out, "tracing= langchain=true") {
		t.Errorf("replay --no-quiet-sdks: %q", out)
	}
}

// TestNoModelCallNote: a run whose agent made no model call through
// jukebox says so; one that did, does not. A replay says so when the
// tape holds calls the agent did not make (its client ignored the base
// URL this time), not when the recording made none either: the
// recording said so, and the replay has nothing to add (every replay of
// a tape of the Python SDK's transactions alone repeated it); nor when the
// agent ended otherwise than recorded, which failed before its calls (it
// led a replay from another folder, its script not found there).
func TestNoModelCallNote(t *testing.T) {
	tape := filepath.Join(t.TempDir(), "none.jbx")
	_, errs := wantCode(t, ExitOK, "record", "-o", tape, "--", "true")
	if !strings.Contains(errs, "made no model call through jukebox") {
		t.Errorf("no note for a run without model calls: %q", errs)
	}
	if _, errs := wantCode(t, ExitOK, "replay", tape); strings.Contains(errs, "made no model call") {
		t.Errorf("the replay of a tape without model calls repeated the recording's note: %q", errs)
	}
	calls := filepath.Join("..", "..", "testdata", "tapes", "agent-run.jbx")
	if _, errs := wantCode(t, ExitOK, "replay", calls, "--", "true"); !strings.Contains(errs, "made no model call through jukebox") {
		t.Errorf("no note for a replay that made none of the tape's calls: %q", errs)
	}
	if _, errs := wantCode(t, 1, "replay", calls, "--", "false"); strings.Contains(errs, "made no model call") {
		t.Errorf("the note for a replayed agent that failed before its calls: %q", errs)
	}
}

// TestQuietSDKsListed: docs/recording.md lists every variable replay sets.
func TestQuietSDKsListed(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "recording.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range engine.QuietSDKEnv {
		if !strings.Contains(string(readme), "`"+q.Name+"="+q.Value+"`") {
			t.Errorf("docs/recording.md does not list %s=%s", q.Name, q.Value)
		}
	}
}

// TestUnpricedModelNote: a run whose calls use a model without a price
// says so, and --json names it: its cost is unknown, not zero.
func TestUnpricedModelNote(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	agent := `import json, os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps({"model": "my-local-llama",
    "messages": [{"role": "user", "content": "hi"}]}).encode(), headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])`
	out, errs := wantCode(t, ExitOK, "record", "--json", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", filepath.Join(t.TempDir(), "u.jbx"), "--", py, "-c", agent)
	if !strings.Contains(errs, "no price for my-local-llama") || !strings.Contains(out, `"unpriced_models": [`) {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errs)
	}
}
