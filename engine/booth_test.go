//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestRecordInBooth runs the demo agent inside the booth with each commit
// policy: its poem.txt lands in the workspace only when committed, and the
// tape holds the tx frames and the file change with its content either way.
func TestRecordInBooth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy engine.CommitPolicy
		mode   sandbox.Mode
		landed bool
	}{
		{engine.CommitNever, "", false},
		{engine.CommitAlways, "", true},
		{engine.CommitOnSuccess, sandbox.ModeCopy, true},
	} {
		t.Run(string(c.policy)+"/"+string(c.mode), func(t *testing.T) {
			t.Parallel()
			srv := startModel(t, nil)
			run := pythonAgent(t, "demo-small")
			tape := filepath.Join(t.TempDir(), "booth.jbx")
			var notice bytes.Buffer
			res, err := engine.Record(context.Background(), engine.RecordOptions{
				RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: run.env, Stdout: &run.stdout, Stderr: &run.stdout,
					Booth: &engine.BoothOptions{Commit: c.policy, Mode: c.mode, Notice: &notice}},
				Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
			if err != nil || res.End.ExitCode != 0 {
				t.Fatalf("record: %v, exit %d\n%s", err, res.End.ExitCode, run.stdout.String())
			}
			_, statErr := os.Stat(filepath.Join(run.dir, "poem.txt"))
			if landed := statErr == nil; landed != c.landed || res.Booth.Committed != c.landed {
				t.Fatalf("poem.txt landed %v, committed %v; want %v (notice %q)", landed, res.Booth.Committed, c.landed, notice.String())
			}
			if entries, _ := os.ReadDir(run.dir); !c.landed && len(entries) != 1 {
				t.Fatalf("after the rollback the workspace holds %v; want only agent.py", entries)
			}
			checkTape(t, tape)
			kinds, change := boothFrames(t, tape)
			wantEnd := tapefmt.KindTxRollback
			if c.landed {
				wantEnd = tapefmt.KindTxCommit
			}
			if !kinds[tapefmt.KindTxBegin] || !kinds[wantEnd] || !bytes.Contains(change, []byte("needle")) {
				t.Fatalf("tape frames %v, poem blob %q", kinds, change)
			}
			if landed, _ := os.ReadFile(filepath.Join(run.dir, "poem.txt")); c.landed && !bytes.Equal(landed, change) {
				t.Fatalf("committed poem.txt %q, taped %q", landed, change)
			}
		})
	}
}

// boothFrames returns the kinds on the tape and the content of poem.txt's file change.
func boothFrames(t *testing.T, path string) (map[tapefmt.Kind]bool, []byte) {
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	kinds := map[tapefmt.Kind]bool{}
	var content []byte
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		kinds[f.Kind] = true
		if f.Kind != tapefmt.KindFileChange {
			continue
		}
		p, _ := f.Decode()
		if fc := p.(*tapefmt.FileChange); fc.Path == "poem.txt" {
			content, _ = tp.Blob(fc.Body)
		}
	}
	return kinds, content
}

// TestReplayInBooth: a replay in the booth re-executes the agent's writes
// in staging only; rolled back, the workspace is as it was.
func TestReplayInBooth(t *testing.T) {
	t.Parallel()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	tape := filepath.Join(t.TempDir(), "run.jbx")
	record(t, srv, run, tape)
	os.Remove(filepath.Join(run.dir, "poem.txt"))
	srv.Close()
	var out bytes.Buffer
	res, err := engine.Replay(context.Background(), engine.ReplayOptions{
		RunOptions: engine.RunOptions{Argv: run.argv, Dir: run.dir, Env: append(cleanEnv(), "AGENT_MODEL=demo-large"), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &out}},
		From: tape})
	if err != nil || res.Divergence != nil || res.End.ExitCode != 0 {
		t.Fatalf("replay: %v, %+v\n%s", err, res, out.String())
	}
	if entries, _ := os.ReadDir(run.dir); len(entries) != 1 || len(res.Booth.Changes.Changes) != 1 {
		t.Fatalf("workspace holds %v after the rollback; booth staged %v", entries, res.Booth.Changes.Changes)
	}
}
