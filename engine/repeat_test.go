package engine_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
)

// TestReplayRepeatServesAnswersAgain: an agent run twice in one replay
// asks each recorded call twice. Without --repeat the second asking
// diverges; with it the recorded answers are served again and counted.
func TestReplayRepeatServesAnswersAgain(t *testing.T) {
	t.Parallel()
	run, tape, rec := recordedDemo(t)
	twice := []string{"sh", "-c", `"$0" "$1" && "$0" "$1"`, run.argv[0], run.argv[1]}
	env := append(cleanEnv(), "AGENT_MODEL=demo-large")
	replayTwice := func(repeat bool) *engine.Result {
		var out bytes.Buffer
		res, err := engine.Replay(context.Background(), engine.ReplayOptions{
			RunOptions: engine.RunOptions{Argv: twice, Dir: run.dir, Env: env, Stdout: &out, Stderr: &out, QuietSDKs: true},
			From:       tape, Repeat: repeat,
		})
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		return res
	}
	res := replayTwice(false)
	if res.Divergence == nil {
		t.Fatal("without --repeat, asking the recorded calls again did not diverge")
	}
	// The report said the endpoint "was never called in the recording
	// (it has no more calls there)", with no word of --repeat.
	if d := res.Divergence; !d.Again || d.Recorded == 0 || !strings.Contains(d.Error(), "asked once more than recorded") ||
		!strings.Contains(d.Error(), "--repeat") || strings.Contains(d.Error(), "never called") {
		t.Errorf("without --repeat, the divergence (asked again %v, recorded %d): %v", d.Again, d.Recorded, d)
	}
	res = replayTwice(true)
	if res.Divergence != nil || res.End.ExitCode != 0 || res.Repeated != int(rec.Calls) {
		t.Fatalf("with --repeat: divergence %v, exit %d, repeated %d, want 0 divergences and %d repeats",
			res.Divergence, res.End.ExitCode, res.Repeated, rec.Calls)
	}
}
