package engine_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapegen"
	"github.com/jukebox-os/jukebox/reqmatch"
)

// children are this process's child processes (zombies included).
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// TestReplayGivenUpLeavesNoKeeper: a replay (and a recording) starts its
// agent's keeper while it sets the run up; one given up before the agent
// (its index failed, its folder missing) ends that keeper, which would otherwise wait
// for an agent as long as jukebox lives. Not parallel: the other tests'
// children would be counted (those from before are left out).
func TestReplayGivenUpLeavesNoKeeper(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "run.jbx")
	if err := tapegen.WriteFile(src, tapegen.Spec{Steps: 2, Chunks: 2, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, pid := range children(t) {
		before[pid] = true
	}
	typo := compiledRules(t, reqmatch.Rules{Ignore: []string{"messages.*.contnt"}})
	for _, o := range []engine.ReplayOptions{
		{From: src, Rules: typo, RunOptions: engine.RunOptions{Argv: []string{"true"}, Dir: dir, Stdout: io.Discard, Stderr: io.Discard}},
		{From: src, RunOptions: engine.RunOptions{Argv: []string{"true"}, Dir: filepath.Join(dir, "gone"), Stdout: io.Discard, Stderr: io.Discard}},
	} {
		if _, err := engine.Replay(context.Background(), o); err == nil {
			t.Fatalf("replay %+v ran", o)
		}
		for _, pid := range children(t) {
			if !before[pid] {
				t.Fatalf("the replay given up left process %s", pid)
			}
		}
	}
	// A recording starts its keeper ahead too.
	if _, err := engine.Record(context.Background(), engine.RecordOptions{Tape: filepath.Join(dir, "rec.jbx"),
		RunOptions: engine.RunOptions{Argv: []string{"true"}, Dir: filepath.Join(dir, "gone"), Stdout: io.Discard, Stderr: io.Discard}}); err == nil {
		t.Fatal("a recording in a folder that is not there ran")
	}
	for _, pid := range children(t) {
		if !before[pid] {
			t.Fatalf("the recording given up left process %s", pid)
		}
	}
}
