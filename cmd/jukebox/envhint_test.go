package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestDivergenceNamesTheEnvironment is issue 31's "replaying without the
// agent's own environment variables diverges at frame 1 with a precise
// report that never mentions the environment": the agent takes its prompt
// from $TASK_PROMPT; replayed with another value the report names the
// variable (never its value), in the message and in --json.
func TestDivergenceNamesTheEnvironment(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	agent := strings.ReplaceAll(promptAgent, `os.environ["PROMPT"]`, `os.environ["TASK_PROMPT"]`)
	tape := filepath.Join(t.TempDir(), "env.jbx")
	run := func(prompt string, args ...string) (string, string, int) {
		return jbIn("", []string{"TASK_PROMPT=" + prompt}, append(args, "--", py, "-c", agent)...)
	}
	if _, errs, code := run("summarise the quarterly report", "record", "-o", tape, "--upstream", "openai="+srv.OpenAIBaseURL()); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	if _, errs, code := run("summarise the quarterly report", "replay", tape); code != ExitOK || strings.Contains(errs, "environment") {
		t.Fatalf("replay with the same environment: exit %d\n%s", code, errs)
	}
	_, errs, code := run("translate the quarterly report", "replay", tape)
	if code != ExitDiverged || !strings.Contains(errs, "come from the environment ($TASK_PROMPT)") {
		t.Fatalf("replay with another $TASK_PROMPT: exit %d, want %d naming the variable:\n%s", code, ExitDiverged, errs)
	}
	out, _, _ := run("translate the quarterly report", "replay", "--json", tape)
	var res struct {
		Divergence struct {
			Env []string `json:"environment"`
		} `json:"divergence"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Divergence.Env) != 1 || res.Divergence.Env[0] != "TASK_PROMPT" {
		t.Fatalf("replay --json: %v %+v\n%s", err, res, out)
	}

	// A provider's base URL the recording ran with is replay's to set:
	// unset now, it was named as a change the agent may need.
	base := filepath.Join(t.TempDir(), "base.jbx")
	if _, errs, code := jbIn("", []string{"TASK_PROMPT=x", "AGENT_MODE=x", "OPENAI_BASE_URL=" + srv.OpenAIBaseURL()}, "record", "-o", base, "--", py, "-c", agent); code != ExitOK {
		t.Fatalf("record with OPENAI_BASE_URL: exit %d\n%s", code, errs)
	}
	// The agent ends otherwise (exit 3), so the replay says what in the
	// environment changed: $AGENT_MODE, not the base URL.
	out, errs, code = jbIn("", []string{"TASK_PROMPT=x", "OPENAI_BASE_URL=", "AGENT_MODE=y"}, "replay", "--json", base, "--", py, "-c", agent+"\nraise SystemExit(3)")
	if code != 3 || strings.Contains(errs, "OPENAI_BASE_URL") || strings.Contains(out, "OPENAI_BASE_URL") || !strings.Contains(out, `"environment_changed"`) {
		t.Fatalf("replay without the recorded OPENAI_BASE_URL: exit %d\n%s\n%s", code, out, errs)
	}
}
