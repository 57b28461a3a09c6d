package engine_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/reqmatch"
)

// TestIndexErrorStartsNothing: a replay indexes the recorded calls while
// it sets the run up, and the agent starts only once the index is whole.
// An index that fails (here an ignore path that matches no recorded
// field) ends the replay before the agent runs, and the replay's own tape
// begun meanwhile is removed: as before the index overlapped the set-up.
func TestIndexErrorStartsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, out, marker := filepath.Join(dir, "run.jbx"), filepath.Join(dir, "out.jbx"), filepath.Join(dir, "ran")
	if err := tapegen.WriteFile(src, tapegen.Spec{Steps: 3, Chunks: 4, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	typo := compiledRules(t, reqmatch.Rules{Ignore: []string{"messages.*.contnt"}})
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{From: src, Tape: out, Rules: typo,
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "touch " + marker}, Dir: dir, Env: cleanEnv(),
			Stdout: io.Discard, Stderr: io.Discard}})
	var ie *engine.IgnoreError
	if !errors.As(err, &ie) || res != nil {
		t.Fatalf("replay with an ignore path that matches nothing: %+v, %v; want an IgnoreError and no result", res, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent ran before the index failed (%v)", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replay's tape is left behind (%v)", err)
	}
	// The same replay with the rule spelled right runs the agent.
	fixed := compiledRules(t, reqmatch.Rules{Ignore: []string{"messages.*.content"}})
	if _, err := engine.Replay(context.Background(), engine.ReplayOptions{From: src, Tape: out, Rules: fixed,
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "touch " + marker}, Dir: dir, Env: cleanEnv(),
			Stdout: io.Discard, Stderr: io.Discard}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the agent did not run with the rule right: %v", err)
	}
}
