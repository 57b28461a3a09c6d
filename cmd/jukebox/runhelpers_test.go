package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// scriptedModel serves the scripted model with script (llmsim's JSON) on
// a free loopback port until the test ends.
func scriptedModel(t *testing.T, script string) *llmsim.Server {
	t.Helper()
	s, err := llmsim.ParseScript([]byte(script))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", s)
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// oneAnswer is a script that answers every call with the same text.
const oneAnswer = `{"version": 1, "rules": [{"name": "any", "reply": {"text": "the same answer"}}]}`

// jbIn runs jukebox (jukeboxBin) with args in dir, env added to the
// test's: its stdout, stderr and exit code.
func jbIn(dir string, env []string, args ...string) (string, string, int) {
	cmd := exec.Command(jukeboxBin(), args...)
	cmd.Dir, cmd.Env = dir, append(append(os.Environ(), mainEnv+"=1"), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}
