package main

import (
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestPlayForkGoesBesideItsParent: a fork made on the turntable went to
// ./tapes of the folder jukebox play ran in, named after the parent's
// run whatever the form's name field said; reopened, the fork list (b),
// which looks beside the parent, no longer found it. prepareFork now
// leaves the tape to the turntable (beside the parent: NAME.jbx for a
// named fork) and keeps the form's name for the run.
func TestPlayForkGoesBesideItsParent(t *testing.T) {
	tape := filepath.Join(sampleTapes(t), "agent-run.jbx")
	for _, name := range []string{"", "try-small"} {
		fo := &engine.ForkOptions{Parent: tape}
		fo.Name = name
		if err := (&PlayCmd{Tapes: []string{tape}, NoBooth: true}).prepareFork(fo); err != nil {
			t.Fatal(err)
		}
		want := name
		if want == "" {
			want = tapeName(mustStart(t, tape)) // the parent's run
		}
		if fo.Tape != "" || fo.Name != want {
			t.Errorf("name %q: the fork's tape %q, its run's name %q; want the turntable's tape and %q", name, fo.Tape, fo.Name, want)
		}
	}
}

// TestPackFromAnotherFolder: a fork's tape named its parent by the path
// given on the command line, relative to where jukebox ran: pack from any
// other folder failed ("open adv/adv.jbx: no such file or directory").
// The path is absolute now; an older tape's relative one is looked for
// beside the fork when it is not where it says.
func TestPackFromAnotherFolder(t *testing.T) {
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	dir := t.TempDir()
	agent := []string{"--", "env", "PROMPT=hello", py, "-c", promptAgent}
	up := "openai=" + srv.OpenAIBaseURL()
	if _, errs, code := jbIn(dir, nil, append([]string{"record", "-o", "run.jbx", "--upstream", up}, agent...)...); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	if _, errs, code := jbIn(dir, nil, append([]string{"fork", "run.jbx", "--frame", "1", "--no-booth", "--model", "demo-large",
		"--upstream", up, "-o", "fork.jbx"}, agent...)...); code != ExitOK {
		t.Fatalf("fork: exit %d\n%s", code, errs)
	}
	elsewhere := t.TempDir()
	if _, errs, code := jbIn(elsewhere, nil, "pack", filepath.Join(dir, "fork.jbx"), "-o", "packed.jbx"); code != ExitOK {
		t.Errorf("pack from another folder: exit %d\n%s", code, errs)
	}
}

func mustStart(t *testing.T, tape string) *tapefmt.RunStart {
	t.Helper()
	start, err := parentStart(nil, tape, nil)
	if err != nil {
		t.Fatal(err)
	}
	return start
}
