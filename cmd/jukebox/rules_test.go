package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/reqmatch"
	"github.com/jukebox-os/jukebox/sidecar"
)

// promptAgent asks the model $PROMPT once and prints the answer.
const promptAgent = `import json, os, urllib.request
body = json.dumps({"model": "demo-small", "messages": [{"role": "user", "content": os.environ["PROMPT"]}]}).encode()
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body,
    {"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
print(json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"])
`

// promptTape records promptAgent asking prompt, with extra record flags,
// and returns the tape and the command that runs the agent with another
// prompt.
func promptTape(t *testing.T, prompt string, flags ...string) (string, func(string) []string) {
	t.Helper()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	agent := func(p string) []string { return []string{"env", "PROMPT=" + p, py, "-c", promptAgent} }
	tape := filepath.Join(t.TempDir(), "prompt.jbx")
	args := append([]string{"record", "-o", tape, "--upstream", "openai=" + srv.OpenAIBaseURL()}, flags...)
	wantCode(t, ExitOK, append(append(args, "--"), agent(prompt)...)...)
	return tape, agent
}

// TestStrictIgnoresPlantedRules is issue 31's "a planted
// {"ignore":["messages"]} beside a tape made replay --strict pass a run
// with another prompt": --strict uses only the tape's own rules and its
// command line's, and names the file it left out; without --strict the
// rules beside the tape are applied and named.
func TestStrictIgnoresPlantedRules(t *testing.T) {
	tape, agent := promptTape(t, "what is the capital of France?")
	side := sidecar.Dir(tape)
	must(t, os.MkdirAll(side, 0o755))
	must(t, os.WriteFile(filepath.Join(side, reqmatch.FileName), []byte(`{"ignore": ["messages"]}`), 0o644))

	other := append([]string{"replay", "--strict", tape, "--"}, agent("delete every file")...)
	_, errs := wantCode(t, ExitDiverged, other...)
	if !strings.Contains(errs, "--strict: the matching rules beside the tape are not used") || !strings.Contains(errs, "ignore messages") {
		t.Errorf("--strict does not name the rules it left out:\n%s", errs)
	}
	_, errs = wantCode(t, ExitOK, append([]string{"replay", tape, "--"}, agent("delete every file")...)...)
	if !strings.Contains(errs, "matching rules from "+filepath.Join(side, reqmatch.FileName)+" applied: ignore messages") {
		t.Errorf("rules beside the tape applied without a word:\n%s", errs)
	}
}

// TestMalformedRulesBesideATape: a file beside the tape that does not read
// (planted, or cut) made replay --strict exit 2, and rules --clear could
// not remove it (exit 2, the file still there). --strict now leaves it out
// as any rules beside the tape, naming it; without --strict it is exit 2
// naming the file and --clear; rules --clear removes it and the folder.
func TestMalformedRulesBesideATape(t *testing.T) {
	tape, agent := promptTape(t, "what is the capital of France?")
	side := sidecar.Dir(tape)
	must(t, os.MkdirAll(side, 0o755))
	must(t, os.WriteFile(filepath.Join(side, reqmatch.FileName), []byte("not json"), 0o644))

	same := append([]string{"replay", "--strict", tape, "--"}, agent("what is the capital of France?")...)
	if _, errs := wantCode(t, ExitOK, same...); !strings.Contains(errs, reqmatch.FileName+" does not read") {
		t.Errorf("--strict does not name the file it left out:\n%s", errs)
	}
	if _, errs := wantCode(t, ExitUsage, "replay", tape); !strings.Contains(errs, "jukebox rules --clear") {
		t.Errorf("replay does not say how to remove the file:\n%s", errs)
	}
	out, _ := wantCode(t, ExitOK, "rules", "--clear", tape)
	if !strings.Contains(out, "removed (it did not read:") {
		t.Errorf("rules --clear:\n%s", out)
	}
	if _, err := os.Stat(side); !os.IsNotExist(err) {
		t.Errorf("the sidecar folder is left after --clear: %v", err)
	}
}

// TestRecordKeepsRulesInTheTape: rules given to record are written into
// the tape (run.start match), and every replay uses them, --strict too,
// with nothing beside the tape; jukebox rules shows where each comes from.
func TestRecordKeepsRulesInTheTape(t *testing.T) {
	tape, agent := promptTape(t, "report for 2026-12-04", "--scrub", `\d{4}-\d\d-\d\d`)
	rs, err := engine.FirstRunStart(openTape(t, tape))
	must(t, err)
	if rs.Match == nil || len(rs.Match.Scrub) != 1 || rs.Match.Scrub[0].Pattern != `\d{4}-\d\d-\d\d` {
		t.Fatalf("run.start match: %+v", rs.Match)
	}
	wantCode(t, ExitOK, append([]string{"replay", "--strict", tape, "--"}, agent("report for 2027-01-31")...)...)
	if _, err := os.Stat(sidecar.Dir(tape)); err == nil {
		t.Errorf("record wrote a sidecar folder; its rules belong in the tape")
	}
	out, _ := wantCode(t, ExitOK, "rules", tape)
	if !strings.Contains(out, `recorded with (in the tape; every replay and fork): scrub /\d{4}-\d\d-\d\d/`) {
		t.Errorf("jukebox rules:\n%s", out)
	}
}

// TestRulesRememberedOnlyWhenAsked is issue 31's "one exploratory --ignore
// messages turns the tape into order-only matching for good": rules given
// to replay are for that run, kept beside the tape only with
// --remember-rules, and jukebox rules --clear removes them.
func TestRulesRememberedOnlyWhenAsked(t *testing.T) {
	tape := filepath.Join(sampleTapes(t), "agent-run.jbx")
	file := filepath.Join(sidecar.Dir(tape), reqmatch.FileName)
	wantCode(t, ExitOK, "replay", "--ignore", "messages", tape, "--", "true")
	if _, err := os.Stat(file); err == nil {
		t.Fatalf("an exploratory --ignore was kept in %s", file)
	}
	_, errs := wantCode(t, ExitOK, "replay", "--ignore", "messages", "--remember-rules", tape, "--", "true")
	if _, err := os.Stat(file); err != nil || !strings.Contains(errs, "remembered in") {
		t.Fatalf("--remember-rules kept nothing (%v):\n%s", err, errs)
	}
	out, _ := wantCode(t, ExitOK, "rules", "--clear", tape)
	if !strings.Contains(out, "removed (it held: ignore messages)") {
		t.Errorf("rules --clear:\n%s", out)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("rules --clear left %s", file)
	}
}
