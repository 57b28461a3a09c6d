package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestDivergenceNamesTheRecordedEnv: an agent whose request depends on a
// variable it was recorded with, replayed without it, diverges; the note
// naming the variable was printed only when the agent ended otherwise
// (a divergence returned before it), in --json alone.
func TestDivergenceNamesTheRecordedEnv(t *testing.T) {
	py := testenv.RequirePython(t)
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.py")
	must(t, os.WriteFile(agent, []byte(`
import json, os, urllib.request
body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": os.environ.get("AGENT_MODE", "plain")}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                             {"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
print(urllib.request.urlopen(req).status)
`), 0o644))
	t.Chdir(dir)
	t.Setenv("AGENT_MODE", "seeded")
	wantCode(t, ExitOK, "record", "--upstream", "openai="+srv.OpenAIBaseURL(), "-o", "seed.jbx", "--", py, agent)
	os.Unsetenv("AGENT_MODE")
	_, errs := wantCode(t, ExitDiverged, "replay", "seed.jbx")
	if !strings.Contains(errs, "the recording ran with AGENT_MODE=seeded (unset here)") {
		t.Errorf("a divergence does not name the variable the recording ran with:\n%s", errs)
	}
	// README: "reported exactly (frame, step, what differs)"; the step
	// went unsaid.
	if !regexp.MustCompile(`replay diverged at frame \d+ \(step 1\): the live POST`).MatchString(errs) {
		t.Errorf("a divergence does not name its step:\n%s", errs)
	}
	out, _ := wantCode(t, ExitDiverged, "replay", "--json", "seed.jbx")
	if !strings.Contains(out, `"step": 1`) {
		t.Errorf("replay --json's divergence has no step:\n%s", out)
	}
}
