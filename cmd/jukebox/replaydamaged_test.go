package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestReplayOfADamagedTapeIsExit3: a tape cut before its first frame, and
// one whose answer names a blob the tape lacks, are damaged tapes (exit 3,
// as verify and test say): replay exited 1 for both ("tape has no
// run.start frame", "blob not found").
func TestReplayOfADamagedTapeIsExit3(t *testing.T) {
	py := testenv.RequirePython(t)
	whole, err := os.ReadFile(filepath.Join(sampleTapes(t), "agent-run.jbx"))
	must(t, err)
	t.Chdir(t.TempDir())
	must(t, os.WriteFile("cut.jbx", whole[:200], 0o644))
	if _, errs := wantCode(t, ExitBadTape, "replay", "cut.jbx", "--", "true"); !strings.Contains(errs, "cut.jbx") {
		t.Errorf("replay of a cut tape does not name it:\n%s", errs)
	}

	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	err = tapefmt.CreateWith("noblob.jbx", tapefmt.Options{}, func(w *tapefmt.Writer) error {
		w.Append(0, tapefmt.RunStart{Argv: []string{"agent"}})
		req, err := w.PutBlob("request", []byte(body))
		if err != nil {
			return err
		}
		missing := tapefmt.HashOf([]byte("an answer that is not on the tape"))
		w.Append(0, tapefmt.LLMRequest{Call: 0, Provider: "openai", Method: "POST", Path: "/v1/chat/completions", Model: "gpt-4o", Body: req})
		w.Append(0, tapefmt.LLMResponse{Call: 0, Status: 200, Model: "gpt-4o", Body: missing, Size: 33})
		_, err = w.Append(0, tapefmt.RunEnd{})
		return err
	})
	must(t, err)
	must(t, os.WriteFile("agent.py", []byte(`
import os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", b'`+body+`',
                             {"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
try:
    urllib.request.urlopen(req).read()
except Exception as e:
    print("agent:", e)
`), 0o644))
	if _, errs := wantCode(t, ExitBadTape, "replay", "noblob.jbx", "--", py, "agent.py"); !strings.Contains(errs, "blob not found") {
		t.Errorf("replay of a tape missing an answer's blob does not say so:\n%s", errs)
	}
}

// TestReplayRefusesAnExistingOutput: replay -o naming a file that is there
// started the agent and ended with the writer's "create tape: open ...:
// file exists", exit 1; as record, it is refused before anything runs.
func TestReplayRefusesAnExistingOutput(t *testing.T) {
	dir := sampleTapes(t)
	tape, out := filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "kept.jbx")
	must(t, os.WriteFile(out, []byte("the user's"), 0o644))
	if _, errs := wantCode(t, ExitUsage, "replay", tape, "-o", out, "--", "true"); !strings.Contains(errs, "-o "+out+" is there") {
		t.Errorf("replay -o over a file: %q", errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "the user's" {
		t.Errorf("the file was changed: %q", b)
	}
}

// TestACommandGoesAfterDashes: README's `jukebox replay tapes/agent-*.jbx`
// once a fork was there ran the fork's tape as the agent (exit 1), and
// `replay A.jbx B.jbx --strict` ran B, --strict dropped; fork took its
// flags after the second tape as the command ("missing flags: --frame").
func TestACommandGoesAfterDashes(t *testing.T) {
	dir := sampleTapes(t)
	tape, fork := filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "agent-fork.jbx")
	for _, args := range [][]string{
		{"replay", tape, fork, "--strict"},
		{"fork", tape, fork, "--frame", "1", "--model", "m"},
	} {
		if _, errs := wantCode(t, ExitUsage, args...); !strings.Contains(errs, fork+" is a second (a glob that matched more than one?)") {
			t.Errorf("jukebox %s: %q", strings.Join(args, " "), errs)
		}
	}
	if _, errs := wantCode(t, ExitUsage, "replay", tape, "python3", "agent.py", "--strict"); !strings.Contains(errs, "python3: the agent's command goes after -- ("+tape+" -- python3 agent.py --strict)") {
		t.Errorf("a command without --: %q", errs)
	}
}

// TestDirNotThereIsAUsageError: replay and fork --dir naming a folder that
// is not there were exit 1, once the run was set up; exit-codes.md counts
// a folder named that is not there among bad arguments (2).
func TestDirNotThereIsAUsageError(t *testing.T) {
	dir := sampleTapes(t)
	tape, missing := filepath.Join(dir, "agent-run.jbx"), filepath.Join(dir, "nodir")
	for _, cmd := range []string{"replay", "fork"} {
		args := []string{cmd, tape, "--dir", missing}
		if cmd == "fork" {
			args = append(args, "--frame", "1")
		}
		if _, errs := wantCode(t, ExitUsage, args...); !strings.Contains(errs, "--dir "+missing+": no such folder") {
			t.Errorf("%s --dir missing: %q", cmd, errs)
		}
	}
	if _, errs := wantCode(t, ExitUsage, "replay", tape, "--dir", tape); !strings.Contains(errs, "--dir "+tape+": not a folder") {
		t.Errorf("replay --dir a file: %q", errs)
	}
}

// TestVerifyATapeBeingRecorded: verify during a recording failed it, "tape
// has no footer (not closed)", exit 3, while ls said "recording".
func TestVerifyATapeBeingRecorded(t *testing.T) {
	dir := t.TempDir()
	tape := filepath.Join(dir, "live.jbx")
	rec := jukeboxCmd(t.Context(), dir, "record", "-o", tape, "--", "sh", "-c", "echo started; read x")
	stdin, err := rec.StdinPipe()
	must(t, err)
	out, err := rec.StdoutPipe()
	must(t, err)
	must(t, rec.Start())
	defer func() { stdin.Close(); rec.Wait() }()
	line := make([]byte, 8)
	if _, err := io.ReadFull(out, line); err != nil {
		t.Fatal(err)
	}
	vout, errs := wantCode(t, ExitOK, "verify", tape)
	if !strings.Contains(vout, "ok    "+tape+": still being recorded") {
		t.Errorf("verify of a tape being recorded: %q %q", vout, errs)
	}
	js, _ := wantCode(t, ExitOK, "verify", "--json", tape)
	if !strings.Contains(js, `"recording": true`) || strings.Contains(js, `"torn"`) {
		t.Errorf("verify --json of a tape being recorded:\n%s", js)
	}
}

// TestTornAndTamperedIsSaidSo: tampered.jbx cut short (no footer): verify
// said "no footer" alone, and recover chained the changed frame anew into
// a tape that verified and could be sealed.
func TestTornAndTamperedIsSaidSo(t *testing.T) {
	dir := sampleTapes(t)
	b, err := os.ReadFile(filepath.Join(dir, "tampered.jbx"))
	must(t, err)
	torn := filepath.Join(dir, "tampered-torn.jbx")
	must(t, os.WriteFile(torn, b[:len(b)-300], 0o644))
	out, _ := wantCode(t, ExitBadTape, "verify", torn)
	if !strings.Contains(out, "hash chain broken") || !strings.Contains(out, "and it is torn") {
		t.Errorf("verify of a torn tampered tape: %q", out)
	}
	rec := filepath.Join(dir, "laundered.jbx")
	if _, errs := wantCode(t, ExitBadTape, "recover", torn, "-o", rec); !strings.Contains(errs, "hash chain broken") || !strings.Contains(errs, "nothing written") {
		t.Errorf("recover of a torn tampered tape: %q", errs)
	}
	if _, err := os.Stat(rec); err == nil {
		t.Error("recover wrote a tape of the tampered frames")
	}
}

// TestShowJSONOfATornTapeWarns: show --json of a torn tape exited 0 with
// nothing on stderr: nothing said that frames were dropped.
func TestShowJSONOfATornTapeWarns(t *testing.T) {
	torn := filepath.Join(sampleTapes(t), "torn.jbx")
	out, errs := wantCode(t, ExitOK, "show", "--json", torn)
	if !strings.Contains(errs, "warning: "+torn+": tape has no footer") || strings.Contains(out, "warning") {
		t.Errorf("show --json of a torn tape: stderr %q", errs)
	}
}

// TestMessagesNameWhatIsWrong: a new user's mistakes got internal words
// or exit 1: booth --tx naming no transaction ("sandbox: no such
// transaction"), recover -o onto a file ("create tape: open ...: file
// exists"), test of a folder not there ("stat nope/: ..."), pack of a
// tape that is no fork (exit 1).
func TestMessagesNameWhatIsWrong(t *testing.T) {
	dir := sampleTapes(t)
	run := filepath.Join(dir, "agent-run.jbx")
	if _, errs := wantCode(t, ExitUsage, "booth", "commit", "-C", t.TempDir(), "--tx", "nope"); !strings.Contains(errs, "no such booth transaction here (jukebox booth status lists them)") {
		t.Errorf("booth commit --tx nope: %q", errs)
	}
	out := filepath.Join(dir, "kept.jbx")
	must(t, os.WriteFile(out, []byte("the user's"), 0o644))
	if _, errs := wantCode(t, ExitUsage, "recover", filepath.Join(dir, "torn.jbx"), "-o", out); !strings.Contains(errs, "-o "+out+" is there") {
		t.Errorf("recover -o over a file: %q", errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "the user's" {
		t.Errorf("recover -o changed the file: %q", b)
	}
	nope := filepath.Join(dir, "nope") + "/"
	if _, errs := wantCode(t, ExitUsage, "test", nope); !strings.Contains(errs, nope+": no such tape or folder") {
		t.Errorf("test of a folder not there: %q", errs)
	}
	if _, errs := wantCode(t, ExitUsage, "pack", run, "-o", filepath.Join(dir, "packed.jbx")); !strings.Contains(errs, "not a fork, or packed already") {
		t.Errorf("pack of a tape that is no fork: %q", errs)
	}
}

// TestBoothWithoutAHomeIsRefusedFirst: a fork (in the booth by default)
// with HOME unset failed once its tape was begun, "sandbox: booth key: no
// home directory", exit 1, a two-frame tape left behind.
func TestBoothWithoutAHomeIsRefusedFirst(t *testing.T) {
	if boothSupported() != nil {
		testenv.Unavailable(t, "the Shadow Booth", "Linux with user namespaces and overlayfs")
	}
	dir := t.TempDir()
	run := filepath.Join(sampleTapes(t), "agent-run.jbx")
	cmd := jukeboxCmd(t.Context(), dir, "fork", run, "--frame", "1", "-o", filepath.Join(dir, "f.jbx"))
	var env []string
	for _, kv := range cmd.Env {
		if !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != ExitUsage || !strings.Contains(string(out), "neither HOME nor XDG_STATE_HOME is set: set one, or pass --no-booth") {
		t.Errorf("fork with no home: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if _, err := os.Stat(filepath.Join(dir, "f.jbx")); err == nil {
		t.Error("the refused fork left a tape")
	}
}
