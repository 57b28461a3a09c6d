package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/llmsim"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestRecordModes is issue 34's recording modes, as vcrpy users know
// them: once records a missing tape and replays it afterwards (with no
// upstream there at all); none replays only and refuses a missing tape;
// new replays what the tape holds and records what is new into a tape
// that supersedes it, the old one kept beside it; all records again. The
// tape says which mode wrote it.
func TestRecordModes(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(promptAgent), 0o644))
	script, err := llmsim.ParseScript([]byte(`{"version": 1, "rules": [{"name": "any", "reply": {"text": "the same answer"}}]}`))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	upstream := srv.OpenAIBaseURL()
	run := func(mode, prompt string) (string, int) {
		cmd := exec.Command(jukeboxBin(), "record", "--record-mode", mode, "-o", "t.jbx", "--upstream", "openai="+upstream, "--", py, "agent.py")
		cmd.Dir, cmd.Env = dir, append(os.Environ(), mainEnv+"=1", "PROMPT="+prompt)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	modeOf := func() string {
		rs, err := engine.FirstRunStart(openTape(t, filepath.Join(dir, "t.jbx")))
		must(t, err)
		return rs.RecordMode
	}
	superseded := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "t.superseded-*.jbx"))
		return len(m)
	}
	if out, code := run("none", "hello"); code != ExitUsage || !strings.Contains(out, "t.jbx is not there") {
		t.Fatalf("none with no tape: exit %d\n%s", code, out)
	}
	if out, code := run("once", "hello"); code != ExitOK || modeOf() != "once" {
		t.Fatalf("once with no tape: exit %d, mode %q\n%s", code, modeOf(), out)
	}
	srv.Close() // from here on, once and none must not need it
	for _, mode := range []string{"once", "none"} {
		if out, code := run(mode, "hello"); code != ExitOK || !strings.Contains(out, "replaying it") {
			t.Fatalf("%s with the tape there: exit %d\n%s", mode, code, out)
		}
	}
	if out, code := run("once", "goodbye"); code != ExitDiverged {
		t.Fatalf("once, asked something the tape does not hold: exit %d\n%s", code, out)
	}
	srv, _, err = llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	upstream = srv.OpenAIBaseURL()
	if out, code := run("new", "goodbye"); code != ExitOK || modeOf() != "new" || superseded() != 1 || !strings.Contains(out, "superseded") {
		t.Fatalf("new: exit %d, mode %q, %d superseded\n%s", code, modeOf(), superseded(), out)
	}
	if out, code := run("none", "goodbye"); code != ExitOK {
		t.Fatalf("the superseding tape does not replay the new question: exit %d\n%s", code, out)
	}
	if out, code := run("all", "again"); code != ExitOK || modeOf() != "all" || superseded() != 2 {
		t.Fatalf("all: exit %d, mode %q, %d superseded\n%s", code, modeOf(), superseded(), out)
	}
	if out, code := run("sometimes", "again"); code != ExitUsage || !strings.Contains(out, "--record-mode") {
		t.Fatalf("a mode that is not one: exit %d\n%s", code, out)
	}
}

// TestRecordRefusesAnExistingTape: record -o FILE where FILE is there, with
// no --record-mode, is a usage error (exit 2) that names --record-mode,
// before the agent starts, and leaves FILE as it was. It was "tapefmt:
// create tape: open FILE: file exists" with exit 1.
func TestRecordRefusesAnExistingTape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tape := filepath.Join(dir, "t.jbx")
	old := []byte("not overwritten")
	must(t, os.WriteFile(tape, old, 0o644))
	_, errs, code := jbIn(dir, nil, "record", "-o", "t.jbx", "--", "sh", "-c", "touch ran")
	if code != ExitUsage || !strings.Contains(errs, "t.jbx is there") || !strings.Contains(errs, "--record-mode") {
		t.Errorf("record -o over an existing tape: exit %d\n%s", code, errs)
	}
	if b, err := os.ReadFile(tape); err != nil || !bytes.Equal(b, old) {
		t.Errorf("the existing tape changed: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the agent ran")
	}
}

// TestRecordMakesTheTapesFolder: -o in a folder that is not there yet
// makes it, as record makes ./tapes (the engine does it for every run's
// tape: fork's -o template too). It failed with "create tape: open ...:
// no such file or directory".
func TestRecordMakesTheTapesFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, errs, code := jbIn(dir, nil, "record", "-o", "runs/today/t.jbx", "--", "sh", "-c", "echo hi"); code != ExitOK {
		t.Fatalf("record -o runs/today/t.jbx: exit %d\n%s", code, errs)
	}
	tapetest.Verify(t, filepath.Join(dir, "runs", "today", "t.jbx"))
}
