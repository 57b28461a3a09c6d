package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestReplayElsewhereNamesDir: a run recorded with a relative command
// (./agent.sh) and replayed from another folder fails to start, and
// jukebox says where the recording ran and that --dir runs it there, the
// folder quoted for a shell (it was pasted bare: "my project" split in
// two); when that folder is gone, --dir FOLDER, not the recorded one.
func TestReplayElsewhereNamesDir(t *testing.T) {
	t.Parallel()
	home, other := filepath.Join(t.TempDir(), "my project"), t.TempDir()
	must(t, os.Mkdir(home, 0o755))
	must(t, os.WriteFile(filepath.Join(home, "agent.sh"), []byte("#!/bin/sh\necho ok\n"), 0o755))
	tape := filepath.Join(t.TempDir(), "rel.jbx")
	run := func(dir string, args ...string) (string, int) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), mainEnv+"=1")
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run(home, "record", "-o", tape, "--", "./agent.sh"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	out, code := run(other, "replay", tape)
	if code == 0 || !strings.Contains(out, "--dir '"+home+"'") {
		t.Fatalf("replay from another folder: exit %d, want a failure naming --dir %s:\n%s", code, home, out)
	}
	// The command is found (sh) but the script it names (agent.sh) is not:
	// the agent ends otherwise, and the note names --dir all the same.
	tape = filepath.Join(filepath.Dir(tape), "sh.jbx")
	if out, code := run(home, "record", "-o", tape, "--", "sh", "agent.sh"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	if out, code = run(other, "replay", tape); code == 0 || !strings.Contains(out, "--dir '"+home+"' replays it where it was recorded") {
		t.Fatalf("replay of sh agent.sh from another folder: exit %d, want a note naming --dir %s:\n%s", code, home, out)
	}
	if out, _ = run(home, "replay", tape); strings.Contains(out, "--dir") {
		t.Fatalf("replay in the recorded folder named --dir:\n%s", out)
	}
	// The recorded folder is gone: replaying with --dir it, as advised,
	// failed with "the agent's folder (--dir) ...: no such file".
	must(t, os.RemoveAll(home))
	for _, tape := range []string{tape, filepath.Join(filepath.Dir(tape), "rel.jbx")} {
		out, code = run(other, "replay", tape)
		if code == 0 || strings.Contains(out, "--dir '"+home+"'") || !strings.Contains(out, "is not here: replay with --dir FOLDER") {
			t.Errorf("replay of %s, its recorded folder gone: exit %d, want advice without that folder:\n%s", filepath.Base(tape), code, out)
		}
	}
}

// TestReplayNamesTheRecordedEnv: an agent recorded with a variable it
// needs (PYTHONPATH, a virtual environment) and replayed without it fails
// before its first call, and the replay said only that it exited
// otherwise; it names the variable now, with the recorded value and the
// replay's, and says nothing of the variables that are as they were.
func TestReplayNamesTheRecordedEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte("#!/bin/sh\n[ \"$AGENT_HOME\" = '/opt/agent home' ] || { echo 'AGENT_HOME is not the agent home' >&2; exit 3; }\necho ok\n"), 0o755))
	tape := filepath.Join(dir, "env.jbx")
	run := func(env []string, args ...string) (string, int) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Dir, cmd.Env = dir, append(append(os.Environ(), mainEnv+"=1", "LANG=C.UTF-8"), env...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	if out, code := run([]string{"AGENT_HOME=/opt/agent home"}, "record", "-o", tape, "--", "./agent.sh"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	out, code := run(nil, "replay", tape)
	if code != 3 || !strings.Contains(out, "the recording ran with AGENT_HOME='/opt/agent home' (unset here)") || strings.Contains(out, "LANG=") {
		t.Fatalf("replay without AGENT_HOME: exit %d, want 3 and a note naming AGENT_HOME alone:\n%s", code, out)
	}
	// --json names them, values left out.
	out, _ = run(nil, "replay", "--json", tape)
	if !strings.Contains(out, `"environment_changed": [
    "AGENT_HOME"
  ]`) {
		t.Fatalf("replay --json without AGENT_HOME: want environment_changed naming it:\n%s", out)
	}
	out, _ = run([]string{"AGENT_HOME=/opt/agent home"}, "replay", tape)
	if strings.Contains(out, "the recording ran with") {
		t.Fatalf("a replay that ended as recorded named variables:\n%s", out)
	}
	// A value of this environment is never printed: it may be a secret
	// the recording masked.
	out, code = run([]string{"AGENT_HOME=sk-live-abcdef123456"}, "replay", tape)
	if code != 3 || !strings.Contains(out, "AGENT_HOME='/opt/agent home' (set otherwise here)") || strings.Contains(out, "sk-live") {
		t.Fatalf("replay with another AGENT_HOME: exit %d, want a note without this environment's value:\n%s", code, out)
	}
	// A recorded value is the tape's, anyone's file: a terminal's escape
	// in it is shown, never sent to the terminal.
	esc := filepath.Join(dir, "esc.jbx")
	if out, code := run([]string{"AGENT_HOME=/opt/agent home", "AGENT_TITLE=\x1b]0;pwned\x07"}, "record", "-o", esc, "--", "./agent.sh"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	if out, code = run(nil, "replay", esc); code != 3 || !strings.Contains(out, "AGENT_TITLE=") || strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("replay of a tape whose variable holds escapes: exit %d, want them shown, not sent:\n%q", code, out)
	}
}

// TestReplayElsewhereSaysNotThatTheClientIgnoresJukebox: a recorded agent
// that called a model, replayed from another folder, could not open its
// script; the replay led with "the agent made no model call through
// jukebox ... its client ignores the base URL variables", which was not
// why, before the note naming --dir.
func TestReplayElsewhereSaysNotThatTheClientIgnoresJukebox(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	home, other := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(home, "agent.py"), []byte(oneCallAgent), 0o644))
	tape := filepath.Join(t.TempDir(), "call.jbx")
	if _, errs, code := jbIn(home, nil, "record", "-o", tape, "--upstream", "openai="+srv.OpenAIBaseURL(), "--", py, "agent.py"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	_, errs, code := jbIn(other, nil, "replay", tape)
	if code == ExitOK || !strings.Contains(errs, "replays it where it was recorded") || strings.Contains(errs, "made no model call") {
		t.Errorf("replay from another folder: exit %d\n%s", code, errs)
	}
}
