package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestTestCommand is issue 34's jukebox test: a folder of tapes, one of
// each verdict, replayed strictly in parallel, each in the folder and
// with the command it recorded unless jukebox.json beside them says
// otherwise; the exit code is the worst verdict's (3 over 5 over 6 over
// 1), the JUnit XML parses with the counts, --json names each verdict.
func TestTestCommand(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "suite"), 0o755))
	run := func(args ...string) (string, string, int) { return jbIn(dir, nil, args...) }
	record := func(name string, argv ...string) {
		args := append([]string{"record", "-o", filepath.Join("suite", name), "--upstream", "openai=" + srv.OpenAIBaseURL(), "--"}, argv...)
		if _, errs, code := run(args...); code != ExitOK {
			t.Fatalf("record %s: exit %d\n%s", name, code, errs)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(promptAgent), 0o644))
	ask := func(prompt string) []string { return []string{"env", "PROMPT=" + prompt, py, "agent.py"} }
	record("good.jbx", ask("hello")...)
	record("diverge.jbx", ask("hello")...)
	record("differs.jbx", "sh", "-c", "echo $$")
	record("missing.jbx", "sh", "-c", "echo hi")
	// An agent that failed when recorded and fails alike in replay
	// reproduced its recording: a pass, whatever replay's own exit code.
	if _, errs, code := run("record", "-o", filepath.Join("suite", "failing.jbx"), "--", "sh", "-c", "echo failing; exit 3"); code != 3 {
		t.Fatalf("record failing.jbx: exit %d\n%s", code, errs)
	}
	tampered, err := os.ReadFile(filepath.Join("..", "..", "testdata", "tapes", "tampered.jbx"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "suite", "tampered.jbx"), tampered, 0o644))
	cfg, _ := json.Marshal(map[string]any{"tapes": map[string]any{
		"diverge.jbx": map[string]any{"command": ask("goodbye")},
		"missing.jbx": map[string]any{"command": []string{"./no-such-agent"}},
	}})
	must(t, os.WriteFile(filepath.Join(dir, "suite", "jukebox.json"), cfg, 0o644))

	// The report's folder is not there yet (CI's reports/): it is made.
	out, errs, code := run("test", "suite", "-j", "3", "--junit", "reports/junit.xml", "--json")
	if code != ExitBadTape {
		t.Fatalf("jukebox test: exit %d, want %d\n%s\n%s", code, ExitBadTape, out, errs)
	}
	checkShape(t, jsonDoc(t), "test", out, map[string]map[string]bool{})
	var sum testSummary
	must(t, json.Unmarshal([]byte(out), &sum))
	want := map[string]string{"good.jbx": "pass", "failing.jbx": "pass", "diverge.jbx": "diverged", "differs.jbx": "differs",
		"missing.jbx": "error", "tampered.jbx": "unreadable"}
	for _, r := range sum.Tapes {
		if w := want[filepath.Base(r.Tape)]; r.Verdict != w {
			t.Errorf("%s: verdict %q (%s), want %q", r.Tape, r.Verdict, r.Where, w)
		}
	}
	if len(sum.Tapes) != 6 || sum.Passed != 2 || sum.Failed != 4 {
		t.Errorf("summary %+v", sum)
	}
	b, err := os.ReadFile(filepath.Join(dir, "reports", "junit.xml"))
	must(t, err)
	var junit junitSuites
	if err := xml.Unmarshal(b, &junit); err != nil || len(junit.Suites) != 1 {
		t.Fatalf("the JUnit report does not parse: %v\n%s", err, b)
	}
	if s := junit.Suites[0]; s.Tests != 6 || s.Failures != 2 || s.Errors != 2 || len(s.Cases) != 6 {
		t.Errorf("JUnit counts: %d tests, %d failures, %d errors", s.Tests, s.Failures, s.Errors)
	}
	for _, gone := range []struct {
		tape string
		next int
	}{{"tampered.jbx", ExitDiverged}, {"diverge.jbx", ExitDiffers}, {"differs.jbx", ExitInternal}, {"missing.jbx", ExitOK}} {
		must(t, os.Remove(filepath.Join(dir, "suite", gone.tape)))
		out, errs, code := run("test", "suite")
		if code != gone.next {
			t.Fatalf("without %s: exit %d, want %d\n%s\n%s", gone.tape, code, gone.next, out, errs)
		}
	}
	record("slow.jbx", "sh", "-c", "echo hi")
	must(t, os.WriteFile(filepath.Join(dir, "suite", "jukebox.json"), []byte(`{"tapes": {"slow.jbx": {"command": ["sleep", "60"]}}}`), 0o644))
	out, errs, code = run("test", "suite", "--timeout", "2s", "--json")
	if code != ExitInternal || !strings.Contains(out, `"verdict": "timeout"`) {
		t.Errorf("an agent that outlives --timeout: exit %d\n%s\n%s", code, out, errs)
	}
	if _, errs, code := run("test", "no-such-folder"); code != ExitUsage || !strings.Contains(errs, "no-such-folder") {
		t.Errorf("a folder that is not there: exit %d\n%s", code, errs)
	}
}

// TestTestRecordModeAll: jukebox test --record-mode all records every tape
// again, in its folder, with the command jukebox.json gives; the old tape
// is kept beside the new one, and the suite passes against the new ones.
func TestTestRecordModeAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) (string, int) {
		out, errs, code := jbIn(dir, nil, args...)
		return out + errs, code
	}
	must(t, os.Mkdir(filepath.Join(dir, "suite"), 0o755))
	if out, code := run("record", "-o", filepath.Join("suite", "a.jbx"), "--", "sh", "-c", "echo one"); code != ExitOK {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	must(t, os.WriteFile(filepath.Join(dir, "suite", "jukebox.json"), []byte(`{"command": ["sh", "-c", "echo two"]}`), 0o644))
	if out, code := run("test", "suite"); code != ExitDiffers {
		t.Fatalf("test before recording again: exit %d, want %d\n%s", code, ExitDiffers, out)
	}
	if out, code := run("test", "suite", "--record-mode", "all"); code != ExitOK {
		t.Fatalf("test --record-mode all: exit %d\n%s", code, out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "suite", "a.superseded-*.jbx")); len(m) != 1 {
		t.Fatalf("the old tape is not kept beside the new one: %v", m)
	}
	if out, code := run("test", "suite"); code != ExitOK || strings.Contains(out, "superseded") {
		t.Fatalf("test after recording again: exit %d\n%s", code, out)
	}
}

// TestTestSkipsHarnessTapes: the tapes the pytest plugin and
// engine/jukeboxtest write are their test runners' to replay (the first's
// command is a stand-in that runs only under pytest, the second has
// none): jukebox test over their folder skips them, saying which runner
// replays each, and passes; JSON and JUnit count them as skipped. A
// command given in jukebox.json runs one all the same.
func TestTestSkipsHarnessTapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, start tapefmt.RunStart, more ...tapefmt.Payload) {
		w, err := tapefmt.Create(filepath.Join(dir, name), tapefmt.Options{Sync: tapefmt.SyncNever})
		must(t, err)
		start.Cwd, start.Mode = dir, tapefmt.ModeRecord
		for _, p := range append(append([]tapefmt.Payload{start}, more...), tapefmt.RunEnd{}) {
			_, err = w.Append(0, p)
			must(t, err)
		}
		must(t, w.Close())
	}
	write("test_triage.jbx", tapefmt.RunStart{Argv: []string{"/usr/bin/python3", "-m", "jukebox._pytest_child"}})
	write("TestAgent.jbx", tapefmt.RunStart{External: true})
	// jukebox mcp on its own (mcp wrap's servers, a desktop client's).
	write("mcp-files.jbx", tapefmt.RunStart{Name: "mcp-files", Argv: []string{"sh", "-c", "exit 3"}, External: true},
		tapefmt.MCPMessage{Server: "files", Session: 1, Direction: tapefmt.MCPStart})
	// jukebox replay or fork of one says whose it is, and runs nothing.
	for tape, runner := range map[string]string{"test_triage.jbx": "pytest replays it", "mcp-files.jbx": "recorded by jukebox mcp on its own"} {
		for _, args := range [][]string{{"replay", tape}, {"fork", "--no-booth", "--frame", "1", tape}} {
			if _, errs, code := jbIn(dir, nil, args...); code != ExitUsage || !strings.Contains(errs, runner) || !strings.Contains(errs, "after --") {
				t.Errorf("jukebox %s: exit %d, %q; want %d naming %q", strings.Join(args, " "), code, errs, ExitUsage, runner)
			}
		}
	}
	out, errs, code := jbIn(dir, nil, "test", ".", "--json", "--junit", "report.xml")
	if code != ExitOK {
		t.Fatalf("jukebox test over harness tapes: exit %d\n%s\n%s", code, out, errs)
	}
	var sum struct {
		Tapes []struct {
			Tape, Verdict string
			Where         string `json:"first_divergence"`
		}
		Passed, Failed, Skipped int
	}
	must(t, json.Unmarshal([]byte(out), &sum))
	if sum.Skipped != 3 || sum.Failed != 0 || len(sum.Tapes) != 3 {
		t.Fatalf("want 3 skipped, none failed: %s", out)
	}
	for _, r := range sum.Tapes {
		runner := map[string]string{"TestAgent.jbx": "go test replays it", "test_triage.jbx": "pytest replays it",
			"mcp-files.jbx": "recorded by jukebox mcp on its own"}[r.Tape]
		if r.Verdict != "skipped" || runner == "" || !strings.Contains(r.Where, runner) {
			t.Errorf("%s: verdict %q, %q; want skipped, naming %q", r.Tape, r.Verdict, r.Where, runner)
		}
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.xml"))
	must(t, err)
	if !strings.Contains(string(report), `skipped="3"`) || strings.Count(string(report), "<skipped message=") != 3 {
		t.Errorf("JUnit report does not count the skipped tapes:\n%s", report)
	}
	must(t, os.WriteFile(filepath.Join(dir, "jukebox.json"), []byte(`{"tapes": {"test_triage.jbx": {"command": ["sh", "-c", "exit 0"]}}}`), 0o644))
	out, _, _ = jbIn(dir, nil, "test", "test_triage.jbx", "--json")
	if strings.Contains(out, `"skipped"`+`: 1`) || strings.Contains(out, `"verdict": "skipped"`) {
		t.Errorf("a command given in jukebox.json did not run the tape:\n%s", out)
	}
}
