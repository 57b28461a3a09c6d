package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// committingAgent commits a file through the control API, as the Python
// SDK does, and reads it back.
const committingAgent = `import json, os, urllib.request
def call(path, body):
    req = urllib.request.Request(os.environ["JUKEBOX_CONTROL"] + "/v1/" + path, json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["JUKEBOX_CONTROL_TOKEN"]})
    return json.load(urllib.request.urlopen(req))
tx = call("tx", {})["tx"]
call("tx/%s/write" % tx, {"path": "report.md", "content": "all green\n"})
call("tx/%s/commit" % tx, {})
print("report:", open("report.md").read().strip())
`

// TestTestBoothFindsWhatWasCommitted: jukebox test replays outside the
// booth, where an SDK commit answered from the tape commits nothing: a
// tape of an agent that reads back what it committed failed in a clean
// checkout (here, the recording rolled back). --booth replays each tape in
// the booth, with the recorded commit's files in the agent's view, and
// leaves the folder as it was.
func TestTestBoothFindsWhatWasCommitted(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(committingAgent), 0o644))
	run := func(args ...string) (string, string, int) { return jbIn(dir, nil, args...) }
	out, errs, code := run("record", "--booth", "--commit", "never", "-o", filepath.Join("suite", "report.jbx"), "--", py, "agent.py")
	if code != ExitOK || !strings.Contains(out, "report: all green") {
		if strings.Contains(errs, "cannot confine") {
			testenv.Unavailable(t, "the overlay booth: "+errs, "run on Linux with unprivileged user namespaces allowed")
		}
		t.Fatalf("record: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := run("test", "suite"); code != ExitDiffers {
		t.Fatalf("jukebox test outside the booth: exit %d, want %d (the commit is not there)\n%s", code, ExitDiffers, errs)
	}
	if out, errs, code := run("test", "--booth", "suite", "--json"); code != ExitOK || !strings.Contains(out, `"verdict": "pass"`) {
		t.Fatalf("jukebox test --booth: exit %d\n%s\n%s", code, out, errs)
	}
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "agent.py suite" {
		t.Fatalf("the folder holds %v after the tests", names)
	}
	if _, errs, code := run("test", "--booth", "--record-mode", "all", "suite"); code != ExitUsage || !strings.Contains(errs, "--booth") {
		t.Fatalf("--booth with --record-mode all: exit %d\n%s", code, errs)
	}
}

// TestReplayNamesWhatItDidNotCommit: a replay outside the booth answers an
// SDK commit from the tape and commits nothing; the agent, reading back
// what it committed in a folder where it is not, failed with nothing in
// the verdict about why. The note names the paths and --booth.
func TestReplayNamesWhatItDidNotCommit(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	dir, clean := t.TempDir(), t.TempDir()
	for _, d := range []string{dir, clean} {
		must(t, os.WriteFile(filepath.Join(d, "agent.py"), []byte(committingAgent), 0o644))
	}
	tape := filepath.Join(t.TempDir(), "run.jbx")
	if out, errs, code := jbIn(dir, nil, "record", "-o", tape, "--", py, "agent.py"); code != ExitOK || !strings.Contains(out, "report: all green") {
		t.Fatalf("record: exit %d\n%s%s", code, out, errs)
	}
	_, errs, code := jbIn(clean, nil, "replay", tape, "--json")
	if code == ExitOK || !strings.Contains(errs, `the recording's SDK transactions committed report.md, which this replay answered from the tape without committing`) ||
		!strings.Contains(errs, "--booth puts them in its view") {
		t.Fatalf("replay in a folder without the commit: exit %d\n%s", code, errs)
	}
	if _, errs, code := jbIn(clean, nil, "replay", "--booth", "--commit", "never", "--strict", tape); code != ExitOK {
		if strings.Contains(errs, "cannot confine") {
			testenv.Unavailable(t, "the overlay booth: "+errs, "run on Linux with unprivileged user namespaces allowed")
		}
		t.Fatalf("replay --booth: exit %d\n%s", code, errs)
	}
}
