package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// pyCompiled, in the environment of the tests' Python, lets it keep the
// SDK's compiled modules (python/jukebox/__pycache__, which git ignores):
// with PYTHONDONTWRITEBYTECODE set, as some environments set it, each of
// those hundreds of processes compiled the SDK again, 20 ms of CPU a
// start. Python takes the empty value as unset. Runs whose workspace
// holds the SDK (a booth's, a recording's file changes) keep it set.
const pyCompiled = "PYTHONDONTWRITEBYTECODE="

// TestPythonSDK runs the Python SDK's tests (python/tests) against this
// jukebox: the example of its brief in both branches, sync and async
// tracks, the breaker, staged files, shell, SQLite and PostgreSQL, a fork
// and a diff from Python, the same frames under record and standalone, an
// offline editable install. PostgreSQL comes from JUKEBOX_PG_DSN, as the
// Go tests' does; with it, a scratch server with max_prepared_transactions
// = 0 (JUKEBOX_PG_NOPREP_DSN), which stage_sql must refuse at once.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePython(t)
	root, err := filepath.Abs("../..")
	must(t, err)
	cmd := exec.CommandContext(t.Context(), python, "-m", "unittest", "discover", "-s", filepath.Join(root, "python", "tests"), "-v")
	cmd.Env = append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), pyCompiled)
	if os.Getenv("JUKEBOX_PG_DSN") != "" {
		cmd.Env = append(cmd.Env, "JUKEBOX_PG_NOPREP_DSN="+scratchCluster(t, "-c max_prepared_transactions=0"))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
