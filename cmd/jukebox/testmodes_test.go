package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// TestTestRecordModeKeepsAGoodTape: jukebox test --record-mode all or new
// put whatever the new run recorded in the tape's place: with the model
// down, a recording of the agent crashing superseded the good tape, and
// passed from then on. An agent's exit 3 or 5 was read as jukebox's own
// verdict (unreadable, diverged). And new superseded every tape, nothing
// new or not, a copy piling up beside each at every run.
func TestTestRecordModeKeepsAGoodTape(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	must(t, os.Mkdir(suite, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(promptAgent+"import sys; sys.exit(int(open('code.txt').read()))\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "code.txt"), []byte("0"), 0o644))
	run := func(args ...string) (string, string, int) { return jbIn(dir, nil, args...) }
	if _, errs, code := run("record", "-o", filepath.Join("suite", "good.jbx"), "--upstream", "openai="+srv.OpenAIBaseURL(),
		"--", "env", "PROMPT=hello", py, "agent.py"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	good, err := os.ReadFile(filepath.Join(suite, "good.jbx"))
	must(t, err)
	verdicts := func(args ...string) (testSummary, string) {
		out, errs, _ := run(append([]string{"test", "suite", "--json"}, args...)...)
		var sum testSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil || len(sum.Tapes) != 1 {
			t.Fatalf("jukebox test %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errs)
		}
		return sum, errs
	}
	kept := func(what string) {
		t.Helper()
		if now, _ := os.ReadFile(filepath.Join(suite, "good.jbx")); !bytes.Equal(now, good) {
			t.Fatalf("%s: the good tape was replaced", what)
		}
	}

	// The agent now exits 3 (or 5): its own code, not a verdict of
	// jukebox's; the new recording failed where the old one had not, and
	// the good tape stays.
	for _, c := range []string{"3", "5"} {
		must(t, os.WriteFile(filepath.Join(dir, "code.txt"), []byte(c), 0o644))
		for _, mode := range []string{"all", "new"} {
			sum, errs := verdicts("--record-mode", mode)
			if r := sum.Tapes[0]; r.Verdict != "error" || !strings.Contains(errs, "the new recording failed") {
				t.Errorf("--record-mode %s, agent exit %s: verdict %q (%s)\n%s", mode, c, r.Verdict, r.Where, errs)
			}
			kept("--record-mode " + mode + " of an agent that now exits " + c)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "code.txt"), []byte("0"), 0o644))

	// new with nothing new: no copy beside the tape.
	if sum, errs := verdicts("--record-mode", "new"); sum.Exit != ExitOK {
		t.Fatalf("--record-mode new with nothing new: %+v\n%s", sum, errs)
	}
	kept("--record-mode new with nothing new")
	if m, _ := filepath.Glob(filepath.Join(suite, "good.superseded-*.jbx")); len(m) != 0 {
		t.Errorf("--record-mode new with nothing new superseded the tape: %v", m)
	}

	// The model is down: the new recording is of a crash.
	srv.Close()
	sum, errs := verdicts("--record-mode", "all")
	if r := sum.Tapes[0]; r.Verdict != "error" || sum.Exit != ExitInternal {
		t.Errorf("--record-mode all with the model down: %+v\n%s", sum, errs)
	}
	kept("--record-mode all with the model down")
	if m, _ := filepath.Glob(filepath.Join(suite, "good.failed-*.jbx")); len(m) != 2*2+1 {
		t.Errorf("the failed recordings kept beside the tape: %v", m)
	}
	// They are not tests; a tape of the user's named like one is.
	must(t, os.WriteFile(filepath.Join(suite, "release.new-model.jbx"), good, 0o644))
	out, errs, code := run("test", "suite", "--json")
	var after testSummary
	if err := json.Unmarshal([]byte(out), &after); err != nil || code != ExitOK || after.Passed != 2 || len(after.Tapes) != 2 {
		t.Errorf("the suite after: exit %d, %+v (%v)\n%s", code, after, err, errs)
	}
}

// TestTestInterrupted: Ctrl-C during jukebox test reported the replays it
// stopped as differing and the tapes not run as errors, wrote them into
// the JUnit report as failures, and exited 6. It exits 130 now, counts
// them apart, and writes no report.
func TestTestInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	must(t, os.Mkdir(suite, 0o755))
	for _, name := range []string{"a.jbx", "b.jbx"} {
		if _, errs, code := jbIn(dir, nil, "record", "-o", filepath.Join("suite", name), "--", "sh", "-c", "echo hi"); code != ExitOK {
			t.Fatalf("record: exit %d\n%s", code, errs)
		}
	}
	must(t, os.WriteFile(filepath.Join(suite, "jukebox.json"), []byte(`{"command": ["sh", "-c", "touch started; sleep 60"]}`), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := jukeboxCmd(ctx, dir, "test", "suite", "-j", "1", "--json", "--junit", "report.xml")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	must(t, cmd.Start())
	for _, err := os.Stat(filepath.Join(dir, "started")); err != nil; _, err = os.Stat(filepath.Join(dir, "started")) {
		if ctx.Err() != nil {
			t.Fatalf("the first tape's agent never started\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond) // polling for the file, with the deadline above
	}
	must(t, cmd.Process.Signal(syscall.SIGINT))
	cmd.Wait()
	var sum testSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted || sum.Exit != ExitInterrupted || sum.Interrupted != 2 || sum.Failed != 0 {
		t.Errorf("exit %d, summary %+v\n%s", code, sum, stderr.String())
	}
	for _, r := range sum.Tapes {
		if r.Verdict != "interrupted" {
			t.Errorf("%s: verdict %q (%s)", r.Tape, r.Verdict, r.Where)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.xml")); err == nil {
		t.Errorf("a JUnit report was written for an interrupted run")
	}
}

// TestTestInterruptedExitCode: the --json summary of a run an interrupt
// cut short said exit_code 5 when a tape had diverged before it (0 when
// none had), while the command exited 130; docs/json.md says 130.
func TestTestInterruptedExitCode(t *testing.T) {
	for _, c := range []struct {
		verdicts []string
		want     int
	}{
		{[]string{"diverged", "interrupted"}, ExitInterrupted},
		{[]string{"interrupted", "interrupted"}, ExitInterrupted},
		{[]string{"pass", "unreadable", "interrupted"}, ExitInterrupted},
		{[]string{"pass", "diverged"}, ExitDiverged},
	} {
		codes := map[string]int{"pass": ExitOK, "diverged": ExitDiverged, "unreadable": ExitBadTape, "interrupted": ExitInterrupted}
		var rs []testResult
		for _, v := range c.verdicts {
			rs = append(rs, testResult{Verdict: v, Code: codes[v]})
		}
		if got := summarise(rs).Exit; got != c.want {
			t.Errorf("%v: exit_code %d, want %d", c.verdicts, got, c.want)
		}
	}
}

// TestTestFolderAndReportPaths: a relative "dir" in jukebox.json was taken
// from that folder twice (the replay ran in it and was given it again as
// --dir), so jukebox test worked only from the config's own folder, and
// failed as "fork/exec .../jukebox-booth: no such file or directory". A
// --junit path that cannot be written was found after every tape ran,
// and lost their results.
func TestTestFolderAndReportPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"agents", "cfg", "gone"} {
		must(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	if _, errs, code := jbIn(filepath.Join(dir, "gone"), nil, "record", "-o", filepath.Join("..", "cfg", "gone.jbx"), "--", "sh", "-c", "echo hi"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	must(t, os.Remove(filepath.Join(dir, "gone")))
	must(t, os.WriteFile(filepath.Join(dir, "cfg", "jukebox.json"), []byte(`{"dir": "../agents"}`), 0o644))
	if out, errs, code := jbIn(dir, nil, "test", "cfg"); code != ExitOK {
		t.Errorf("jukebox test cfg from its parent: exit %d\n%s%s", code, out, errs)
	}
	must(t, os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644))
	out, errs, code := jbIn(dir, nil, "test", "cfg", "--junit", filepath.Join("afile", "r.xml"))
	if code != ExitUsage || !strings.Contains(errs, "--junit") || strings.Contains(out, "ok ") {
		t.Errorf("an unwritable --junit path: exit %d\n%s%s", code, out, errs)
	}
	// The folder a replay runs in, when it is not there, is named.
	out, errs, code = jbIn(dir, nil, "replay", filepath.Join("cfg", "gone.jbx"), "--dir", filepath.Join(dir, "nowhere"))
	if code != ExitUsage || !strings.Contains(errs, "--dir "+filepath.Join(dir, "nowhere")+": no such folder") || strings.Contains(errs, "jukebox-booth") {
		t.Errorf("replay --dir of a folder not there: exit %d\n%s%s", code, out, errs)
	}
}
