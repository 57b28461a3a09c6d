package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// pytestAgent is a pytest module of an agent's tests: a marked test and
// one that asks for the fixture, parametrized (a tape per test id).
const pytestAgent = `import json, os, urllib.request
import pytest

def ask(prompt):
    body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": prompt}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"Content-Type": "application/json", "Authorization": "Bearer sk-pytest-secret"})
    return json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]

@pytest.mark.jukebox
def test_marked():
    assert ask(os.environ.get("PROMPT", "hello"))

@pytest.mark.parametrize("n", [1, 2])
def test_fixture(jukebox, n):
    assert ask("count %d" % n)
    assert jukebox.tape.endswith("test_fixture-%d.jbx" % n)
`

// TestPytestPlugin is issue 34's pytest plugin, run by real pytest with
// the SDK pip-installed into a venv (the entry point alone loads it):
// the first run records a tape per test id against the scripted model;
// with the model gone the next run replays them; a test that asks
// something else fails with jukebox's divergence report in its failure
// message; --jukebox-record-mode none fails a test without a tape, all
// records again (the old tape kept, superseded).
func TestPytestPlugin(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePythonModule(t, "pytest")
	root, err := filepath.Abs("../..")
	must(t, err)
	dir := t.TempDir()
	venv := filepath.Join(dir, "venv")
	py := filepath.Join(venv, "bin", "python")
	// No pip of the venv's own where the interpreter's can install into
	// it (pip --python, pip 22.3 on): bootstrapping one costs seconds.
	mk, pip := []string{"-m", "venv", "--system-site-packages", venv}, []string{python, "-m", "pip", "--python", py}
	if exec.Command(python, "-m", "pip", "--python", python, "--version").Run() == nil {
		mk = append(mk, "--without-pip")
	} else {
		pip = []string{py, "-m", "pip"}
	}
	if out, err := exec.Command(python, mk...).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	install := exec.Command(pip[0], append(pip[1:], "install", "-q", "--no-index", filepath.Join(root, "python"))...)
	install.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pip install: %v\n%s", err, out)
	}
	proj := filepath.Join(dir, "proj")
	must(t, os.MkdirAll(proj, 0o755))
	must(t, os.WriteFile(filepath.Join(proj, "test_agent.py"), []byte(pytestAgent), 0o644))
	sim, _, err := llmsim.Start("127.0.0.1:0", nil)
	must(t, err)
	defer sim.Close()
	pytest := func(env []string, args ...string) (string, bool) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), py, append([]string{"-m", "pytest", "-q", "-p", "no:cacheprovider"}, args...)...)
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), "PYTHONDONTWRITEBYTECODE=1",
			"OPENAI_BASE_URL="+sim.OpenAIBaseURL(), "OPENAI_API_KEY=", "PROMPT=")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	tapes := filepath.Join(proj, "tapes", "test_agent")
	names := []string{"test_marked.jbx", "test_fixture-1.jbx", "test_fixture-2.jbx"}

	// The first run records, one tape per test id.
	out, ok := pytest([]string{"PROMPT=hello"})
	if !ok || !strings.Contains(out, "3 passed") {
		t.Fatalf("first run:\n%s", out)
	}
	if sim.Hits() != 3 {
		t.Fatalf("the model was asked %d times, want 3", sim.Hits())
	}
	for _, n := range names {
		if code, _, stderr := jb(t, "verify", filepath.Join(tapes, n)); code != 0 {
			t.Fatalf("verify %s: %s", n, stderr)
		}
		b, err := os.ReadFile(filepath.Join(tapes, n))
		must(t, err)
		if strings.Contains(string(b), "sk-pytest-secret") {
			t.Fatalf("%s holds the API key", n)
		}
	}

	// Replayed, the model not asked again.
	out, ok = pytest([]string{"PROMPT=hello"})
	if !ok || !strings.Contains(out, "3 passed") || sim.Hits() != 3 {
		t.Fatalf("replay (model asked %d times):\n%s", sim.Hits(), out)
	}

	// A test that asks otherwise fails with the divergence report.
	out, ok = pytest([]string{"PROMPT=goodbye"})
	if ok || !strings.Contains(out, "1 failed, 2 passed") || !strings.Contains(out, "replay diverged at frame 1") ||
		!strings.Contains(out, "messages.0.content") || !strings.Contains(out, `+      "content": "goodbye"`) {
		t.Fatalf("a diverging test:\n%s", out)
	}

	// none: a test without a tape is an error at its setup, naming the
	// tape; all: records again.
	must(t, os.Remove(filepath.Join(tapes, "test_fixture-2.jbx")))
	out, ok = pytest([]string{"PROMPT=hello"}, "--jukebox-record-mode", "none")
	if ok || !strings.Contains(out, "2 passed, 1 error") || !strings.Contains(out, "test_fixture-2.jbx is not there") {
		t.Fatalf("--jukebox-record-mode none without a tape:\n%s", out)
	}
	out, ok = pytest([]string{"PROMPT=goodbye"}, "--jukebox-record-mode", "all", "-k", "marked")
	if !ok || !strings.Contains(out, "1 passed") || sim.Hits() != 4 {
		t.Fatalf("--jukebox-record-mode all (model asked %d times):\n%s", sim.Hits(), out)
	}
	old, _ := filepath.Glob(filepath.Join(tapes, "test_marked.superseded-*.jbx"))
	if len(old) != 1 {
		t.Fatalf("the tape recorded again superseded %v", old)
	}
	out, ok = pytest([]string{"PROMPT=goodbye"}, "--jukebox-record-mode", "sometimes")
	if ok || !strings.Contains(out, "sometimes") {
		t.Fatalf("an unknown mode:\n%s", out)
	}

	// A test id too long for a file name gets a tape cut to fit (it
	// failed with "file name too long"); two ids that make one name do
	// not share a tape (the second replayed the first's and diverged).
	must(t, os.WriteFile(filepath.Join(proj, "test_names.py"), []byte(pytestNames), 0o644))
	out, ok = pytest(nil, "test_names.py")
	if ok || !strings.Contains(out, "2 passed, 1 error") ||
		!strings.Contains(out, "test_names.py::test_clash[p/q] and test_names.py::test_clash[p q] would share the tape") {
		t.Fatalf("long and clashing test ids:\n%s", out)
	}
	long, _ := filepath.Glob(filepath.Join(proj, "tapes", "test_names", "test_long-xxx*.jbx"))
	if len(long) != 1 || len(filepath.Base(long[0])) > 204 {
		t.Fatalf("the long test id's tape: %v", long)
	}
	hits := sim.Hits()
	if out, ok = pytest(nil, "test_names.py", "-k", "long"); !ok || !strings.Contains(out, "1 passed") || sim.Hits() != hits {
		t.Fatalf("the long test id's tape replayed (the model asked %d times more):\n%s", sim.Hits()-hits, out)
	}
}

// pytestNames is a module whose test ids make a name too long for a file
// and two that make the same name.
const pytestNames = `import json, os, urllib.request
import pytest

def ask(prompt):
    body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": prompt}]}).encode()
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]

@pytest.mark.parametrize("q", ["x" * 300])
def test_long(jukebox, q):
    assert ask(q)

@pytest.mark.parametrize("q", ["p q", "p/q"])
def test_clash(jukebox, q):
    assert ask(q)
`
