package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// TestForkOfAnAgentInHostTmp: fork, which runs in the booth by default,
// of a run recorded without it whose agent lives in the host's /tmp,
// outside the workspace, runs the agent: the booth's /tmp shows the
// host's, read-only beneath. (It failed, exit 255, blaming the agent for
// ignoring OPENAI_BASE_URL.)
func TestForkOfAnAgentInHostTmp(t *testing.T) {
	requireConfinedBooth(t)
	dir, err := os.MkdirTemp("/tmp", "jukebox-agent-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	agent := filepath.Join(dir, "agent.sh")
	must(t, os.WriteFile(agent, []byte("#!/bin/sh\n"+curlAgent+"\n"), 0o755))
	srv, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer srv.Close()
	ws, tapes := t.TempDir(), t.TempDir()
	parent := filepath.Join(tapes, "parent.jbx")
	up := "openai=" + srv.OpenAIBaseURL()
	if out, err := jukeboxCmd(t.Context(), ws, "record", "-o", parent, "--upstream", up, "--", agent).CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	cmd := jukeboxCmd(t.Context(), ws, "fork", "--frame", "0", "--upstream", up, "-o", filepath.Join(tapes, "fork.jbx"), "--json", parent)
	var errs strings.Builder
	cmd.Stderr = &errs
	out, err := cmd.Output()
	var rows []forkRow
	if err != nil || json.Unmarshal(out, &rows) != nil || len(rows) != 1 || rows[0].Calls != 1 {
		t.Fatalf("fork in the booth of an agent in the host's /tmp: %v\n%s\n%s", err, out, errs.String())
	}
}

// TestStartFailureInTheBooth: an agent that cannot start in the booth
// (here: in the host's /dev/shm, which the booth makes its own) is exit 1
// with the path and what the booth shows there; not exit 255 with a note
// that the agent ignored OPENAI_BASE_URL, nor a mode named both overlay
// and "the copy".
func TestStartFailureInTheBooth(t *testing.T) {
	requireConfinedBooth(t)
	dir, err := os.MkdirTemp("/dev/shm", "jukebox-agent-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	agent := filepath.Join(dir, "agent.sh")
	must(t, os.WriteFile(agent, []byte("#!/bin/sh\necho ran\n"), 0o755))
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "-o", filepath.Join(t.TempDir(), "r.jbx"), "--booth", "--commit", "never", "--", agent)
	out, _ := cmd.CombinedOutput()
	s := string(out)
	if cmd.ProcessState.ExitCode() != ExitInternal || !strings.Contains(s, agent+": no such file or directory") ||
		!strings.Contains(s, "/dev/shm is the booth's own") || strings.Contains(s, "OPENAI_BASE_URL") || strings.Contains(s, "the copy") {
		t.Errorf("exit %d:\n%s", cmd.ProcessState.ExitCode(), s)
	}
}
