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
