package engine_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestForkOfAnUnreadableParentFails: a fork answers what comes before its
// fork point from the parent, as replay does; a parent whose control-API
// exchange does not read there (a flipped byte in the frame) gave the
// agent the error, and the fork ended with the agent's exit status, not a
// word of the parent's damage. It fails now, naming the parent.
func TestForkOfAnUnreadableParentFails(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed as the agent's client")
	}
	srv := startModel(t, nil)
	post := `curl -s -o /dev/null -H 'Content-Type: application/json' `
	script := post + `-H "Authorization: Bearer $JUKEBOX_CONTROL_TOKEN" -d '{"label":"before"}' "$JUKEBOX_CONTROL/v1/marker"; ` +
		post + `-d '{"model":"demo-small","messages":[{"role":"user","content":"hi"}]}' "$OPENAI_BASE_URL/chat/completions"`
	run := &agentRun{argv: []string{"sh", "-c", script}, dir: t.TempDir(), env: cleanEnv()}
	parent := filepath.Join(t.TempDir(), "parent.jbx")
	record(t, srv, run, parent)
	tp, err := tapefmt.Open(parent)
	if err != nil {
		t.Fatal(err)
	}
	var marker, call int64 = -1, -1
	var callSeq uint64
	for f, err := range tp.Frames(tapefmt.KindControl, tapefmt.KindLLMRequest) {
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Kind == tapefmt.KindControl && marker < 0:
			marker = f.Offset + f.Size() - 2 // a byte of its payload
		case f.Kind == tapefmt.KindLLMRequest && call < 0:
			call, callSeq = f.Offset, f.Seq
		}
	}
	tp.Close()
	if marker < 0 || call < 0 || marker > call {
		t.Fatalf("the parent has no marker before its call (marker at %d, call at %d)", marker, call)
	}
	data, err := os.ReadFile(parent)
	if err != nil {
		t.Fatal(err)
	}
	data[marker] ^= 0x20
	if err := os.WriteFile(parent, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, err = engine.Fork(context.Background(), engine.ForkOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: cleanEnv(), Stdout: &out, Stderr: &out},
		Parent:     parent, Frame: callSeq, Overrides: engine.Overrides{Model: "demo-large"},
		Tape: filepath.Join(t.TempDir(), "fork.jbx"), Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err == nil || !strings.Contains(err.Error(), parent) || !strings.Contains(err.Error(), "control-API exchanges do not read") {
		t.Fatalf("fork of a parent whose marker does not read: %v, want the parent named\n%s", err, out.String())
	}
}
