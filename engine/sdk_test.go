package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestRecordReplayOfficialSDKs records the official openai and
// @anthropic-ai/sdk clients (streaming, non-streaming, a tool loop) through
// jukebox, then replays them with the model stopped and compares their
// output. It needs Node.js and the npm packages (testenv.RequireNode);
// JUKEBOX_SKIP_SDK=1 skips it.
func TestRecordReplayOfficialSDKs(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	for _, a := range []struct{ name, script, model string }{
		{"openai", "openai_agent.mjs", "demo-large"},
		{"anthropic", "anthropic_agent.mjs", "demo-small"},
	} {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			srv := startModel(t, llmsim.DefaultScript())
			env := append(cleanEnv(), "AGENT_MODEL="+a.model, "OPENAI_API_KEY="+secretKey, "ANTHROPIC_API_KEY="+secretKey)
			run := &agentRun{argv: []string{"node", filepath.Join(agents, a.script)}, dir: t.TempDir(), env: env}
			tape := filepath.Join(t.TempDir(), a.name+".jbx")
			rec := record(t, srv, run, tape)
			srv.Close()
			// No keys at all in replay: the placeholders must let the SDKs start.
			res, out := replay(t, run, tape, append(cleanEnv(), "AGENT_MODEL="+a.model))
			if res.Divergence != nil || res.End.ExitCode != 0 {
				t.Fatalf("replay: exit %d, divergence %v", res.End.ExitCode, res.Divergence)
			}
			if out != run.stdout.String() || res.Calls != rec.Calls {
				t.Fatalf("replay printed (%d calls)\n%s\nrecording printed (%d calls)\n%s", res.Calls, out, rec.Calls, run.stdout.String())
			}
		})
	}
}
