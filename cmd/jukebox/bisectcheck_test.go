package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/llmsim"
)

// bisectAgent asks the model at each of STEPS steps; an answer that says
// DAMAGE makes it do something it cannot undo (ruined.txt), as an agent
// that deletes the wrong table would.
const bisectAgent = `i=0
while [ $i -lt STEPS ]; do
  a=$(curl -sS -X POST "$OPENAI_BASE_URL/chat/completions" -H 'content-type: application/json' \
      -d "{\"model\":\"bad\",\"messages\":[{\"role\":\"user\",\"content\":\"step $i\"}]}")
  case "$a" in *DAMAGE*) echo "ruined at step $i" > ruined.txt ;; esac
  i=$((i+1))
done
echo done
`

// bisectFixture records the agent of steps steps against a model that
// answers DAMAGE at step bad (model "bad"; "good" never does), then
// restores the folder to the run's start, as a booth run would have left
// it: the folder, the tape, the model's URL.
func bisectFixture(t *testing.T, steps, bad int) (dir, tape, url string) {
	return bisectFixtureScript(t, steps, bad, "", 0)
}

// bisectFixtureScript is bisectFixture with more rules after the ruin
// and a seed for their chances.
func bisectFixtureScript(t *testing.T, steps, bad int, more string, seed int) (dir, tape, url string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (Debian package curl)")
	}
	script, err := llmsim.ParseScript([]byte(fmt.Sprintf(`{"version": 1, "seed": %d, "rules": [
		{"name": "ruin", "match": {"model": "bad", "user": "^step %d$"}, "reply": {"text": "DAMAGE done"}}%s]}`, seed, bad, more)))
	must(t, err)
	srv, _, err := llmsim.Start("127.0.0.1:0", script)
	must(t, err)
	t.Cleanup(func() { srv.Close() })
	dir = t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(strings.ReplaceAll(bisectAgent, "STEPS", fmt.Sprint(steps))), 0o755))
	tape = filepath.Join(dir, "run.jbx")
	url = srv.OpenAIBaseURL()
	if _, errs, code := jbIn(dir, nil, "record", "--upstream", "openai="+url, "-o", tape, "--", "sh", "agent.sh"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ruined.txt")); err != nil {
		t.Fatalf("the recorded run was not ruined: %v", err)
	}
	must(t, os.Remove(filepath.Join(dir, "ruined.txt")))
	return dir, tape, url
}

// TestBisectCheckFindsThePointOfNoReturn (issue 34 item 4): the run is
// ruined by the model's answer at model call 5 of 12; forked with another
// model at calls up to 5 it passes the check, after it it does not. The
// bisect names call 5 within ceil(log2(13)) = 4 probes, writes each
// probe's tape beside the run (its fork family), remembers the verdicts
// (a second bisect forks nothing) and leaves the run's folder alone.
func TestBisectCheckFindsThePointOfNoReturn(t *testing.T) {
	t.Parallel()
	dir, tape, url := bisectFixture(t, 12, 5)
	args := []string{"bisect", tape, "--check", `test ! -e ruined.txt && grep -q done "$JUKEBOX_BISECT_OUTPUT"`,
		"--model", "good", "--no-booth", "--upstream", "openai=" + url, "--json"}
	out, errs, code := jbIn(dir, nil, args...)
	var rep bisectCheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("bisect: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if rep.Found == nil || rep.Found.Call != 5 || rep.Found.Step != 6 || rep.Calls != 12 {
		t.Fatalf("bisect found %+v of %d calls, want model call 5 (step 6)\n%s", rep.Found, rep.Calls, errs)
	}
	if len(rep.Probes) > 4 || len(rep.ProbeTape) != len(rep.Probes) {
		t.Errorf("%d probes, %d forks made; want at most 4, one fork each", len(rep.Probes), len(rep.ProbeTape))
	}
	for _, p := range rep.ProbeTape {
		if filepath.Dir(p) != dir {
			t.Errorf("probe tape %s is not beside the run", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ruined.txt")); err == nil {
		t.Error("a probe ruined the run's own folder")
	}
	// Again: every probe is remembered, none forked.
	out, errs, code = jbIn(dir, nil, args...)
	var again bisectCheckReport
	if err := json.Unmarshal([]byte(out), &again); err != nil || code != 0 || again.Found == nil || again.Found.Call != 5 || len(again.ProbeTape) != 0 {
		t.Errorf("a second bisect: exit %d, found %+v, %d forks made; want call 5 and none\n%s", code, again.Found, len(again.ProbeTape), errs)
	}
	// --fresh forks them again (there was no way but removing
	// bisect.json when the agent or the check had changed).
	out, errs, code = jbIn(dir, nil, append(args, "--fresh")...)
	var fresh bisectCheckReport
	if err := json.Unmarshal([]byte(out), &fresh); err != nil || code != 0 || len(fresh.ProbeTape) != len(rep.Probes) {
		t.Errorf("bisect --fresh: exit %d, %d forks made; want %d\n%s", code, len(fresh.ProbeTape), len(rep.Probes), errs)
	}
	// The text report names the point of no return and the step.
	text, _, _ := jbIn(dir, nil, args[:len(args)-1]...)
	if !strings.Contains(text, "point of no return: after model call 5 (frame") || !strings.Contains(text, "step 6)") {
		t.Errorf("the report:\n%s", text)
	}
}

// TestBisectCheckRelativeTape: the tape named by a path relative to the
// working folder, as a user types it, is bisected as an absolute one is;
// each probe's fork runs in a copy of the folder, where it was not found
// ("stat .../workspace/run.jbx: no such file or directory", exit 1).
// jukebox test on the folder then runs the run's tape, not the probes',
// whose folders (the copies) are gone: they failed it, one error each.
func TestBisectCheckRelativeTape(t *testing.T) {
	t.Parallel()
	dir, _, url := bisectFixture(t, 4, 1)
	out, errs, code := jbIn(dir, nil, "bisect", "run.jbx", "--check", `test ! -e ruined.txt`,
		"--model", "good", "--no-booth", "--upstream", "openai="+url, "--json")
	var rep bisectCheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("bisect run.jbx: exit %d, %v\n%s%s", code, err, out, errs)
	}
	if rep.Found == nil || rep.Found.Call != 1 {
		t.Fatalf("bisect found %+v, want model call 1\n%s", rep.Found, errs)
	}
	for _, p := range rep.ProbeTape {
		if filepath.Dir(p) != dir {
			t.Errorf("probe tape %s is not beside the run in %s", p, dir)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("probe tape: %v", err)
		}
	}
	out, errs, code = jbIn(dir, nil, "test", ".")
	if code != 0 || !strings.Contains(out, "run.jbx") || strings.Contains(out, "-bisect-") {
		t.Errorf("jukebox test . after the bisect: exit %d\n%s%s", code, out, errs)
	}
}

// TestBisectCheckRunsAndCap: --runs 3 takes each probe's majority;
// --max-cost stops the bisect once spent, with exit 7 and what is known;
// flags that make no sense are exit 2 naming them.
func TestBisectCheckRunsAndCap(t *testing.T) {
	t.Parallel()
	dir, tape, url := bisectFixture(t, 4, 1)
	check := `test ! -e ruined.txt`
	out, errs, code := jbIn(dir, nil, "bisect", tape, "--check", check, "--model", "good", "--no-booth", "--upstream", "openai="+url, "--runs", "3", "--json")
	var rep bisectCheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Found == nil || rep.Found.Call != 1 {
		t.Fatalf("bisect --runs 3: exit %d, %v, %+v\n%s", code, err, rep.Found, errs)
	}
	for _, p := range rep.Probes {
		if len(p.Verdicts) != 2 { // a deterministic model: two alike decide a majority of three
			t.Errorf("probe at call %d: verdicts %v, want two", p.Call, p.Verdicts)
		}
	}
	// A cap the first probe's live calls pass: stopped after it.
	prices := filepath.Join(t.TempDir(), "prices.json")
	must(t, os.WriteFile(prices, []byte(`{"good": {"input_cost_per_token": 0.01, "output_cost_per_token": 0.01}}`), 0o644))
	_, errs, code = jbIn(dir, []string{"JUKEBOX_PRICES=" + prices}, "bisect", tape, "--check", check+" && true", "--model", "good",
		"--no-booth", "--upstream", "openai="+url, "--max-cost", "0.05")
	if code != ExitTripped || !strings.Contains(errs, "cost cap") {
		t.Errorf("bisect --max-cost: exit %d, want %d naming the cap\n%s", code, ExitTripped, errs)
	}
	// A model that has no price under --max-cost: it stopped as "the cost
	// cap of $0.0100 is spent ($0.0000)", its undecided probe printed as
	// bad and the bracket as "rescues at -1 and not at 4". The fork's
	// reason is named, and --unknown-model-rate prices it.
	out, errs, code = jbIn(dir, nil, "bisect", tape, "--check", check+" && :", "--model", "unpriced-9",
		"--no-booth", "--upstream", "openai="+url, "--max-cost", "0.01")
	if code == ExitOK || code == ExitTripped || !strings.Contains(errs, "unknown-model") || strings.Contains(out+errs, "cost cap") {
		t.Errorf("bisect --max-cost of a model without a price: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = jbIn(dir, nil, "bisect", tape, "--check", check+" && :", "--model", "unpriced-9",
		"--no-booth", "--upstream", "openai="+url, "--max-cost", "0.01", "--unknown-model-rate", "0.5")
	if code != ExitOK || !strings.Contains(out, "point of no return") {
		t.Errorf("bisect --unknown-model-rate: exit %d\n%s%s", code, out, errs)
	}
	var text strings.Builder
	(&BisectCmd{}).printCheck(&text, bisectCheckReport{Calls: 4, Stopped: "the cost cap of $0.05 is spent ($0.06)",
		Probes: []bisectProbe{{Call: 2}}, Bracket: [2]int{-1, 4}})
	if s := text.String(); !strings.Contains(s, "model call 2 (frame 0, step 3): stopped before a verdict") || !strings.Contains(s, "nothing is known yet") {
		t.Errorf("a bisect stopped at its first probe:\n%s", s)
	}
	for _, bad := range [][]string{
		{"bisect", tape, "--model", "good"},
		{"bisect", tape, "--check", "true"},
		{"bisect", tape, "--check", "true", "--model", "good", "--runs", "0"},
		{"bisect", tape, "--check", "true", "--model", "good", "--good", tape, "--bad", tape},
	} {
		if _, errs, code := jbIn(dir, nil, bad...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", bad, code, ExitUsage, errs)
		}
	}
}

// TestBisectCheckInTheBooth: without --no-booth each probe forks in the
// Shadow Booth over its own copy of the run's folder, committed there, so
// the check sees what the fork did and the run's folder stays as it was.
func TestBisectCheckInTheBooth(t *testing.T) {
	t.Parallel()
	requireBooth(t)
	dir, tape, url := bisectFixture(t, 4, 2)
	out, errs, code := jbIn(dir, nil, "bisect", tape, "--check", `test ! -e ruined.txt && test -e agent.sh`, "--model", "good",
		"--upstream", "openai="+url, "--json")
	var rep bisectCheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Found == nil || rep.Found.Call != 2 {
		t.Fatalf("bisect in the booth: exit %d, %v, %+v\n%s", code, err, rep.Found, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ruined.txt")); err == nil {
		t.Error("a probe in the booth ruined the run's own folder")
	}
}

// TestBisectCheckRandomModel (issue 34 item 5): the model forked to does
// the damage itself now and then (a seeded chance of 1 in 3), so a probe
// before the point of no return sometimes fails; --runs 3 takes the
// majority and still finds the point.
func TestBisectCheckRandomModel(t *testing.T) {
	t.Parallel()
	const seed = 13 // its draws slip once before the point, which the majority outvotes (other seeds slip twice in a probe, as a real model can)
	dir, tape, url := bisectFixtureScript(t, 8, 4, `, {"name": "slip", "match": {"model": "good", "user": "^step 4$"}, "chance": 0.34, "reply": {"text": "DAMAGE too"}}`, seed)
	out, errs, code := jbIn(dir, nil, "bisect", tape, "--check", "test ! -e ruined.txt", "--model", "good", "--no-booth",
		"--upstream", "openai="+url, "--runs", "3", "--json")
	var rep bisectCheckReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.Found == nil || rep.Found.Call != 4 {
		t.Fatalf("bisect --runs 3 of a random model: exit %d, %v, %+v\n%s", code, err, rep.Found, errs)
	}
	mixed := false
	for _, p := range rep.Probes {
		good := 0
		for _, v := range p.Verdicts {
			if v {
				good++
			}
		}
		mixed = mixed || good > 0 && good < len(p.Verdicts)
	}
	if !mixed {
		t.Errorf("no probe drew both verdicts: the model did not answer at random (%+v)\n%s", rep.Probes, errs)
	}
}
