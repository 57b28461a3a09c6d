package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestReplayOfACutTapeSaysItIsCut: a tape cut short (its recording
// killed, the file torn after the third call) replays its three calls,
// and the fourth is reported as past the end of the cut tape, naming its
// last frame: not as a call "never called in the recording", and never as
// "frame -1".
func TestReplayOfACutTapeSaysItIsCut(t *testing.T) {
	t.Parallel()
	run, tape, _ := recordedDemo(t)
	cutAtRequest(t, tape, 3)
	res, _ := replay(t, run, tape, append(cleanEnv(), "AGENT_MODEL=demo-large"))
	d := res.Divergence
	if d == nil {
		t.Fatal("no divergence reported past the end of the cut tape")
	}
	msg := d.Error()
	if !d.Cut || d.TapeEnds <= 0 || !strings.Contains(msg, "the tape is cut") || strings.Contains(msg, "never called") {
		t.Fatalf("divergence %+v says %q, want the tape named cut", d, msg)
	}
	if w := d.Where(); strings.Contains(w, "-1") || !strings.Contains(w, "cut tape") {
		t.Fatalf("Where() = %q", w)
	}
	full := &engine.Divergence{Frame: -1, Endpoint: "POST /v1/chat/completions"}
	if w := full.Where(); strings.Contains(w, "-1") {
		t.Fatalf("a tape that ran out: Where() = %q", w)
	}
}

// cutAtRequest truncates the tape at its llm.request frame number n
// (from 0), as a crash would tear it.
func cutAtRequest(t *testing.T, path string, n int) {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var off int64 = -1
	for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			off = f.Offset
			break
		}
		n--
	}
	tp.Close()
	if off < 0 {
		t.Fatal("the tape has too few calls to cut")
	}
	if err := os.Truncate(path, off); err != nil {
		t.Fatal(err)
	}
}

// recordedDemo records the demo agent (demo-large) and closes the model:
// a replay must answer everything from the tape.
func recordedDemo(t *testing.T) (*agentRun, string, *engine.Result) {
	t.Helper()
	srv := startModel(t, nil)
	run := pythonAgent(t, "demo-large")
	tape := filepath.Join(t.TempDir(), "run.jbx")
	res := record(t, srv, run, tape)
	srv.Close()
	return run, tape, res
}
