package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// A recording whose tape does not read back is exit 3, ahead of the
// agent's own code, which is still printed; the tape is kept. Here the agent
// writes past the end of its own tape ($JUKEBOX_TAPE), so the footer is no
// longer where a reader looks for it.
func TestRecordTapeThatDoesNotReadBack(t *testing.T) {
	dir := t.TempDir()
	agent := `printf junk | dd of="$JUKEBOX_TAPE" bs=1 seek=1000000 conv=notrunc 2>/dev/null; echo hi; exit 7`
	for _, asJSON := range []bool{false, true} {
		path := filepath.Join(dir, "run.jbx")
		os.Remove(path)
		args := []string{"record", "-o", path, "--", "sh", "-c", agent}
		if asJSON {
			args = append(args[:1], append([]string{"--json"}, args[1:]...)...)
		}
		out, errs := wantCode(t, ExitBadTape, args...)
		if !strings.Contains(errs, "does not read back") || !strings.Contains(errs, "agent exit 7") || strings.Contains(errs, "recorded") {
			t.Errorf("stderr does not say the tape is bad and the agent's code:\n%s", errs)
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("the tape is gone: %v", err)
		}
		if asJSON {
			var res struct {
				Unreadable string `json:"tape_unreadable"`
				End        struct {
					ExitCode int `json:"exit_code"`
				} `json:"end"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.Unreadable == "" || res.End.ExitCode != 7 {
				t.Errorf("--json: %v %+v\n%s", err, res, out)
			}
		}
	}
}

// damageFirstBlob flips the first stored byte of the body blob of the first
// llm.request in the tape at path and returns that frame's number.
func damageFirstBlob(t *testing.T, path string) int {
	t.Helper()
	tp := openTape(t, path)
	for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Decode()
		if err != nil {
			t.Fatal(err)
		}
		tapetest.DamageBlob(t, path, p.(*tapefmt.LLMRequest).Body)
		return int(f.Seq)
	}
	t.Fatal("no llm.request on the tape")
	return 0
}

// show prints every frame, the unreadable one with its error, and exits 3;
// --json carries the error on that frame's line.
func TestShowDamagedBlob(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	bad := damageFirstBlob(t, path)
	out, errs := wantCode(t, ExitBadTape, "show", "--blobs", path)
	if !strings.Contains(out, fmt.Sprintf("ERROR at frame %d (offset", bad)) || !strings.Contains(out, "run.end") {
		t.Errorf("show --blobs does not print the error at frame %d and go on:\n%s", bad, out)
	}
	if !strings.Contains(errs, fmt.Sprintf("frame %d:", bad)) || !strings.Contains(errs, "checksum") {
		t.Errorf("stderr does not name the frame and the cause: %s", errs)
	}
	out, _ = wantCode(t, ExitBadTape, "show", "--blobs", "--json", path)
	lines := jsonLines(t, out)
	if len(lines) != openTape(t, path).Len() {
		t.Fatalf("--json printed %d frames of %d", len(lines), openTape(t, path).Len())
	}
	if !strings.Contains(out, `"error":"blob `) {
		t.Errorf("--json has no error on frame %d:\n%s", bad, out)
	}
	wantCode(t, ExitBadTape, "show", "--blobs", "--frame", fmt.Sprint(bad), path)
	wantCode(t, ExitOK, "show", path) // without --blobs nothing reads the blob
}

// TestShowDamagedFrame: a frame whose record does not read (a byte of
// its payload flipped: its checksum fails) is printed with the documented
// ERROR at frame N (offset O) line, the frames after it too, and show
// exits 3; --json carries the error on that frame's line, and --frame N
// and --kind print it alike. show stopped at the frame with the error on
// stderr alone.
func TestShowDamagedFrame(t *testing.T) {
	path := filepath.Join(sampleTapes(t), "agent-run.jbx")
	tp := openTape(t, path)
	n := tp.Len()
	bad := n / 2
	f, err := tp.Frame(bad)
	must(t, err)
	tp.Close()
	data, err := os.ReadFile(path)
	must(t, err)
	at := bytes.Index(data[f.Offset:], f.Payload)
	if at < 0 {
		t.Fatalf("frame %d's payload is not in its record", bad)
	}
	data[f.Offset+int64(at+len(f.Payload)/2)] ^= 0x01
	must(t, os.WriteFile(path, data, 0o644))

	out, errs := wantCode(t, ExitBadTape, "show", path)
	if !strings.Contains(out, fmt.Sprintf("ERROR at frame %d (offset %d): ", bad, f.Offset)) || !strings.Contains(out, "checksum mismatch") {
		t.Errorf("show does not print the error at frame %d:\n%s", bad, out)
	}
	if !strings.Contains(out, fmt.Sprintf("%6d  ", n-1)) || !strings.Contains(out, "run.end") {
		t.Errorf("show does not go on after frame %d:\n%s", bad, out)
	}
	if !strings.Contains(errs, fmt.Sprintf("frame %d", bad)) || !strings.Contains(errs, "checksum mismatch") {
		t.Errorf("stderr does not name the frame and the cause: %s", errs)
	}
	if !strings.Contains(errs, path+": ") {
		t.Errorf("stderr does not name the tape (\"frame N: tapefmt: ...\" alone): %s", errs)
	}
	out, _ = wantCode(t, ExitBadTape, "show", "--json", path)
	lines := jsonLines(t, out)
	if len(lines) != n || *lines[bad].Seq != uint64(bad) || !strings.Contains(lines[bad].Error, "checksum mismatch") {
		t.Errorf("--json printed %d frames of %d, frame %d without its error:\n%s", len(lines), n, bad, out)
	}
	for _, args := range [][]string{{"--frame", fmt.Sprint(bad)}, {"--kind", f.Kind.String()}} {
		out, _ := wantCode(t, ExitBadTape, append([]string{"show", path}, args...)...)
		if !strings.Contains(out, fmt.Sprintf("ERROR at frame %d (offset %d): ", bad, f.Offset)) {
			t.Errorf("show %s does not print the error at frame %d:\n%s", strings.Join(args, " "), bad, out)
		}
	}
}

// ls marks a tape that fails the quick check, in text and --json: the
// tampered one, and the torn ones, which verify --quick fails too (a
// tape cut short was listed "(torn)" and not DAMAGED); not one still
// being recorded, whose footer is yet to come.
func TestLsDamaged(t *testing.T) {
	dir := sampleTapes(t)
	cut := filepath.Join(dir, "cut.jbx")
	data, err := os.ReadFile(filepath.Join(dir, "agent-run.jbx"))
	must(t, err)
	must(t, os.WriteFile(cut, data, 0o644))
	must(t, os.Truncate(cut, int64(len(data)-100)))
	wantCode(t, ExitBadTape, "verify", "--quick", cut)
	damaged := map[string]bool{"tampered.jbx": true, "torn.jbx": true, "cut.jbx": true}
	out, _ := wantCode(t, ExitOK, "ls", dir)
	for _, name := range []string{"agent-run.jbx", "sealed.jbx", "tampered.jbx", "torn.jbx", "cut.jbx"} {
		if got := strings.Contains(out, "DAMAGED "+filepath.Join(dir, name)+": "); got != damaged[name] {
			t.Errorf("ls marks %s DAMAGED: %v, want %v:\n%s", name, got, damaged[name], out)
		}
	}
	live := filepath.Join(t.TempDir(), "live.jbx")
	w, err := tapefmt.Create(live, tapefmt.Options{})
	must(t, err)
	defer w.Close()
	w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
	_, err = w.Commit()
	must(t, err)
	if tapefmt.Recording(live) { // where the system has the writer's lock
		if out, _ := wantCode(t, ExitOK, "ls", live); strings.Contains(out, "DAMAGED") {
			t.Errorf("ls marks a tape still being recorded DAMAGED:\n%s", out)
		}
	}
	out, _ = wantCode(t, ExitOK, "ls", "--json", dir)
	var rows []struct {
		Path    string `json:"path"`
		Damaged bool   `json:"damaged"`
		Damage  string `json:"damage"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if want := damaged[filepath.Base(r.Path)]; r.Damaged != want || (r.Damage != "") != want {
			t.Errorf("%s: damaged %v (%q), want %v", r.Path, r.Damaged, r.Damage, want)
		}
	}
}

// show --blobs prints a gzip-compressed response decoded, and says so.
func TestShowCompressedBody(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"model":"gpt-4o","choices":[{"message":{"content":"decoded answer"}}]}`))
	zw.Close()
	path := filepath.Join(t.TempDir(), "gz.jbx")
	err := tapefmt.CreateWith(path, tapefmt.Options{}, func(w *tapefmt.Writer) error {
		h, err := w.PutBlob("resp", gz.Bytes())
		if err == nil {
			_, err = w.Append(0, tapefmt.LLMResponse{Status: 200, Body: h, Size: int64(gz.Len()),
				Header: http.Header{"Content-Encoding": {"gzip"}}})
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, path)
	out, _ := wantCode(t, ExitOK, "show", "--blobs", path)
	if !strings.Contains(out, "decoded answer") || !strings.Contains(out, "(gzip, decoded: ") {
		t.Errorf("show --blobs does not decode the gzip body:\n%s", out)
	}
}

// replay -o and fork write tapes too: exit 3 when theirs does not read back.
func TestReplayAndForkTapesThatDoNotReadBack(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jbx")
	wantCode(t, ExitOK, "record", "-o", rec, "--", "sh", "-c", "echo hi")
	tapetest.Verify(t, rec)
	spoil := []string{"--", "sh", "-c", `printf junk | dd of="$JUKEBOX_TAPE" bs=1 seek=1000000 conv=notrunc 2>/dev/null; echo hi`}
	out := filepath.Join(dir, "replay.jbx")
	_, errs := wantCode(t, ExitBadTape, append([]string{"replay", rec, "-o", out}, spoil...)...)
	if !strings.Contains(errs, "does not read back: "+out) {
		t.Errorf("replay -o: %s", errs)
	}
	fork := filepath.Join(dir, "fork.jbx")
	parent := filepath.Join(sampleTapes(t), "agent-run.jbx") // fork needs a model call
	_, errs = wantCode(t, ExitBadTape, append([]string{"fork", parent, "--frame", "2", "--no-booth", "-o", fork}, spoil...)...)
	if !strings.Contains(errs, "does not read back: "+fork) {
		t.Errorf("fork: %s", errs)
	}
}

// A run whose booth failed and whose tape does not read back reports both,
// with exit 3.
func TestRunFailedKeepsEveryCause(t *testing.T) {
	res := &engine.Result{Tape: "t.jbx", Unreadable: "t.jbx: torn"}
	tapeErr := &engine.TapeError{Path: "t.jbx", Err: errors.New("t.jbx: torn")}
	if err := runFailed(tapeErr, res); err != nil {
		t.Fatalf("a tape fault alone: %v, want nil (finishRun reports it)", err)
	}
	err := runFailed(errors.Join(errors.New("booth commit: disk full"), tapeErr), res)
	if err == nil || !strings.Contains(err.Error(), "booth commit: disk full") || !strings.Contains(err.Error(), "does not read back") {
		t.Fatalf("got %v, want both causes", err)
	}
	if codeFor(err) != ExitBadTape {
		t.Errorf("exit %d, want %d", codeFor(err), ExitBadTape)
	}
}

// An agent that truncates or deletes its own tape mid-run: exit 3, with
// advice that fits (recover what reads, or: the tape is gone).
func TestAgentSpoilsItsTape(t *testing.T) {
	for _, c := range []struct{ agent, want string }{
		{`: > "$JUKEBOX_TAPE"; exit 4`, "jukebox recover"},
		{`rm -f "$JUKEBOX_TAPE"; exit 4`, "the tape is gone"},
	} {
		path := filepath.Join(t.TempDir(), "run.jbx")
		_, errs := wantCode(t, ExitBadTape, "record", "-o", path, "--", "sh", "-c", c.agent)
		if !strings.Contains(errs, "does not read back") || !strings.Contains(errs, "agent exit 4") ||
			!strings.Contains(errs, c.want) || strings.Count(errs, path+": ") > 1 {
			t.Errorf("%s:\n%s", c.agent, errs)
		}
	}
}
