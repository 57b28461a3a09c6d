package engine_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestRecordReplayAgentsSDK records the OpenAI Agents SDK (@openai/agents):
// an Agent with tools, streamed, through the Responses API and through the
// Chat Completions API, then replays it offline and compares its output.
// Recording runs with QuietSDKs (as `record --quiet-sdks`), so its trace
// export does not try the public API (jukebox replay sets the same by default).
func TestRecordReplayAgentsSDK(t *testing.T) {
	t.Parallel()
	agents := testenv.RequireNode(t)
	for _, api := range []string{"responses", "chat_completions"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			srv := startModel(t, llmsim.DefaultScript())
			env := append(cleanEnv(), "AGENT_API="+api, "OPENAI_API_KEY="+secretKey)
			run := &agentRun{argv: []string{"node", filepath.Join(agents, "agents_sdk_agent.mjs")}, dir: t.TempDir(), env: env}
			tape := filepath.Join(t.TempDir(), api+".jbx")
			var stderr bytes.Buffer
			rec, err := engine.Record(context.Background(), engine.RecordOptions{
				RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &run.stdout, Stderr: &stderr, QuietSDKs: true},
				Tape:       tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()},
			})
			if err != nil || rec.End.ExitCode != 0 {
				t.Fatalf("record: %v, exit %d\n%s", err, rec.End.ExitCode, stderr.String())
			}
			checkTape(t, tape)
			if rec.Calls < 4 || !strings.Contains(run.stdout.String(), "tool: run_shell") || !strings.Contains(run.stdout.String(), "final: Done.") {
				t.Fatalf("the agent did not run its tool loop (%d calls):\n%s", rec.Calls, run.stdout.String())
			}
			srv.Close()
			res, out := replay(t, run, tape, append(cleanEnv(), "AGENT_API="+api))
			if res.Divergence != nil || res.End.ExitCode != 0 || out != run.stdout.String() || res.Calls != rec.Calls {
				t.Fatalf("replay: exit %d, divergence %v, %d calls (recorded %d)\n%s\nrecording printed\n%s",
					res.End.ExitCode, res.Divergence, res.Calls, rec.Calls, out, run.stdout.String())
			}
		})
	}
}
