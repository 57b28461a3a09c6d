//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/demo"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// recordFilesAgent records the files agent in the booth (rolled back),
// with a snapshot, and returns its folder, its output and the tape.
func recordFilesAgent(t *testing.T) (dir, out, tape string) {
	t.Helper()
	srv := startModel(t, nil)
	dir = t.TempDir()
	script, err := demo.WriteFilesAgent(dir)
	if err != nil {
		t.Fatal(err)
	}
	tape = filepath.Join(t.TempDir(), "files.jbx")
	var stdout, notice bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{testenv.RequirePython(t), script}, Dir: dir,
			Env: append(cleanEnv(), "OPENAI_API_KEY="+secretKey), Stdout: &stdout, Stderr: &stdout,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &notice, Snapshot: true}},
		Tape: tape, Upstreams: map[string]string{"openai": srv.OpenAIBaseURL()}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v, exit %d\n%s%s", err, res.End.ExitCode, stdout.String(), notice.String())
	}
	checkTape(t, tape)
	return dir, stdout.String(), tape
}

// TestBoothRecordsStepBoundaries: the booth records, before each model
// call, what the agent changed since the call before, as step records
// apart from the committed change set; a file written before call 2
// shows at call 2 with the content it had then, not its final content.
func TestBoothRecordsStepBoundaries(t *testing.T) {
	t.Parallel()
	_, _, tape := recordFilesAgent(t)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	calls := 0
	atCall := map[int]map[string]string{} // call -> path -> "op content" of the step records just before it
	var changeSet []string
	snapshot := map[string]bool{}
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		switch p := p.(type) {
		case *tapefmt.LLMRequest:
			calls++
		case *tapefmt.Snapshot:
			for _, e := range p.Files {
				snapshot[e.Path] = true
			}
		case *tapefmt.FileChange:
			body, _ := tp.Blob(p.Body)
			if !p.IsStep() {
				changeSet = append(changeSet, string(p.Op)+" "+p.Path+" "+string(body))
				continue
			}
			if atCall[calls+1] == nil {
				atCall[calls+1] = map[string]string{}
			}
			atCall[calls+1][p.Path] = string(p.Op) + " " + string(body)
		}
	}
	if calls != 3 {
		t.Fatalf("%d calls on the tape, want 3", calls)
	}
	for call, want := range map[int]map[string]string{
		1: {"a.txt": "write a at call 1\n", "d/x.txt": "write x at call 1\n"},
		2: {"a.txt": "write a at call 2, longer\n", "d/x.txt": "restore ", "d/y.txt": "write x at call 1\n", "keep.txt": "delete ", "link": "symlink ", "mode.sh": "chmod "},
		3: {"a.txt": "write a at call 3\n", "d": "restore ", "d/y.txt": "restore ", "sub/deep.txt": "write x"},
		4: {"final.txt": "write after the last call\n"},
	} {
		for p, w := range want {
			if got := atCall[call][p]; got != w {
				t.Errorf("before call %d, %s: step record %q, want %q (all: %q)", call, p, got, w, atCall[call])
			}
		}
	}
	if _, ok := atCall[3]["gone.txt"]; ok {
		t.Errorf("gone.txt, made and removed between two calls, has a step record: %q", atCall[3])
	}
	if !snapshot["keep.txt"] || !snapshot["files_agent.py"] || snapshot["a.txt"] {
		t.Errorf("the snapshot lists %v; want the folder as the run found it", snapshot)
	}
	if !strings.Contains(strings.Join(changeSet, "\n"), "write a.txt a at call 3\n") {
		t.Errorf("the committed change set lost its final content: %q", changeSet)
	}
}
