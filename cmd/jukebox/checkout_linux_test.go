package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/demo"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// folderManifest is what files_agent.py prints of its folder: path to
// "f SHA256", "d" or "l TARGET".
func folderManifest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "l " + target
		case fi.IsDir():
			out[rel] = "d"
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[rel] = "f " + hex.EncodeToString(sum[:])
		}
		return nil
	}))
	return out
}

// agentManifests reads the agent's "MANIFEST N {json}" lines.
func agentManifests(t *testing.T, stdout string) map[int]map[string]string {
	t.Helper()
	out := map[int]map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		rest, ok := strings.CutPrefix(line, "MANIFEST ")
		if !ok {
			continue
		}
		n, js, _ := strings.Cut(rest, " ")
		i, _ := strconv.Atoi(n)
		m := map[string]string{}
		must(t, json.Unmarshal([]byte(js), &m))
		out[i] = m
	}
	return out
}

// callFrames lists the frames of the tape's llm.request frames, and its
// run.end frame last.
func callFrames(t *testing.T, tape string) []int {
	t.Helper()
	tp, err := tapefmt.Open(tape)
	must(t, err)
	defer tp.Close()
	var out []int
	for f, err := range tp.Frames(tapefmt.KindLLMRequest, tapefmt.KindRunEnd) {
		must(t, err)
		out = append(out, int(f.Seq))
	}
	return out
}

// TestCheckoutAtEveryCall: the files agent writes, edits, renames,
// deletes and links files between three scripted model calls, printing
// its folder before each; jukebox checkout of the tape at each call's
// frame (and at the run's end) writes exactly that folder, from the
// snapshot, and from the recorded folder when the tape has none.
func TestCheckoutAtEveryCall(t *testing.T) {
	requireBooth(t)
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	for _, snapshot := range []bool{true, false} {
		ws := t.TempDir()
		script, err := demo.WriteFilesAgent(ws)
		must(t, err)
		tape := filepath.Join(t.TempDir(), "files.jbx")
		args := []string{"record", "-o", tape, "--upstream", "openai=" + srv.OpenAIBaseURL(), "--booth", "--commit", "never"}
		if snapshot {
			args = append(args, "--snapshot")
		}
		stdout, errs, code := jbIn(ws, nil, append(args, "--", py, script)...)
		if code != ExitOK {
			t.Fatalf("record exit %d:\n%s%s", code, stdout, errs)
		}
		manifests := agentManifests(t, stdout)
		frames := callFrames(t, tape)
		if len(frames) != 4 || len(manifests) != 4 {
			t.Fatalf("calls and end at frames %v, manifests %d", frames, len(manifests))
		}
		for i, frame := range frames {
			dir := filepath.Join(t.TempDir(), "out")
			out, errs, code := jbIn("", nil, "checkout", tape, "--frame", strconv.Itoa(frame), dir)
			if code != ExitOK {
				t.Fatalf("snapshot %v: checkout --frame %d: exit %d\n%s%s", snapshot, frame, code, out, errs)
			}
			got, want := folderManifest(t, dir), manifests[i+1]
			if !mapsEqual(got, want) {
				t.Errorf("snapshot %v: checkout at frame %d (call %d):\n got %v\nwant %v", snapshot, frame, i+1, got, want)
			}
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestForkFromTheStartWorkspace: a booth run whose changes were committed
// leaves its folder as it ended; a fork at call 2 run there meets other
// files than the run met (the files agent's os.remove of keep.txt fails).
// With --workspace start the fork runs in the start rebuilt from the
// snapshot: its calls before the fork point see what the parent's saw.
// Without a snapshot and with the folder gone, it is refused, naming why.
func TestForkFromTheStartWorkspace(t *testing.T) {
	requireBooth(t)
	t.Parallel()
	py := testenv.RequirePython(t)
	srv := scriptedModel(t, oneAnswer)
	ws := t.TempDir()
	script, err := demo.WriteFilesAgent(ws)
	must(t, err)
	tape := filepath.Join(t.TempDir(), "files.jbx")
	stdout, errs, code := jbIn(ws, nil, "record", "-o", tape, "--upstream", "openai="+srv.OpenAIBaseURL(),
		"--booth", "--snapshot", "--commit", "always", "--", py, script)
	if code != ExitOK {
		t.Fatalf("record exit %d:\n%s%s", code, stdout, errs)
	}
	parent := agentManifests(t, stdout)
	frames := callFrames(t, tape)
	at := strconv.Itoa(frames[1]) // call 2
	fork := func(extra ...string) (string, string, int) {
		args := append([]string{"fork", tape, "--frame", at, "--upstream", "openai=" + srv.OpenAIBaseURL(),
			"-o", filepath.Join(t.TempDir(), "fork.jbx")}, extra...)
		return jbIn(ws, nil, args...)
	}
	// In the folder as the run left it: the agent meets other files.
	out, _, code := fork()
	if m := agentManifests(t, out); code == ExitOK && mapsEqual(m[1], parent[1]) {
		t.Errorf("the fork in the changed folder met the parent's files at call 1: the test shows nothing")
	}
	dir := filepath.Join(t.TempDir(), "start")
	out, errs, code = fork("--workspace", "start", "--dir", dir)
	if code != ExitOK {
		t.Fatalf("fork --workspace start: exit %d\n%s%s", code, out, errs)
	}
	m := agentManifests(t, out)
	for n := 1; n <= 2; n++ {
		if !mapsEqual(m[n], parent[n]) {
			t.Errorf("fork --workspace start, call %d:\n got %v\nwant %v", n, m[n], parent[n])
		}
	}
	if !strings.Contains(errs, "the workspace as the run started") || !strings.Contains(errs, "from the snapshot on the tape") {
		t.Errorf("fork --workspace start does not say where it runs:\n%s", errs)
	}
	// Without --dir, in a folder of the temporary folder, which a fork
	// that commits nothing (fork's default, --commit never) does not
	// leave behind; nor does one refused before it runs. Both did.
	tmp := t.TempDir()
	past := strconv.Itoa(frames[len(frames)-1] + 2) // after the last call's answer: refused
	for _, frame := range []string{at, past} {
		args := []string{"fork", tape, "--frame", frame, "--upstream", "openai=" + srv.OpenAIBaseURL(),
			"-o", filepath.Join(t.TempDir(), "fork.jbx"), "--workspace", "start"}
		if _, errs, code := jbIn(ws, []string{"TMPDIR=" + tmp}, args...); frame == at && code != ExitOK {
			t.Fatalf("fork --workspace start: exit %d\n%s", code, errs)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "jukebox-fork-start-*")); len(left) > 0 {
			t.Errorf("fork --frame %s --workspace start left %v", frame, left)
		}
	}
	// A --dir that holds something is refused before the agent runs.
	_, errs, code = fork("--workspace", "start", "--dir", ws)
	if code != ExitUsage || !strings.Contains(errs, "is not empty") {
		t.Errorf("--dir not empty: exit %d\n%s", code, errs)
	}
	// No snapshot, and the folder gone: refused, saying so.
	gone := t.TempDir()
	script2, err := demo.WriteFilesAgent(gone)
	must(t, err)
	tape2 := filepath.Join(t.TempDir(), "nosnap.jbx")
	if _, errs, code := jbIn(gone, nil, "record", "-o", tape2, "--upstream", "openai="+srv.OpenAIBaseURL(), "--booth", "--commit", "never", "--", py, script2); code != ExitOK {
		t.Fatalf("record without snapshot: exit %d\n%s", code, errs)
	}
	must(t, os.RemoveAll(gone))
	_, errs, code = jbIn("", nil, "fork", tape2, "--frame", at, "--workspace", "start", "--upstream", "openai="+srv.OpenAIBaseURL())
	if code != ExitUsage || !strings.Contains(errs, "no snapshot") || !strings.Contains(errs, "--snapshot") {
		t.Errorf("no snapshot, folder gone: exit %d\n%s", code, errs)
	}
}
