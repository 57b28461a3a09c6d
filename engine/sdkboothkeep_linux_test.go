//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// controlCall is the start of a Python agent of the booth that calls the
// control API: call(path, body) is the answer, an error's too.
const controlCall = `import json, os, sys, urllib.request
def call(path, body):
    req = urllib.request.Request(os.environ["JUKEBOX_CONTROL"] + "/v1/" + path, json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer " + os.environ["JUKEBOX_CONTROL_TOKEN"]})
    try:
        return json.load(urllib.request.urlopen(req))
    except urllib.error.HTTPError as e:
        return json.load(e)
`

// controlAgent commits control-API transactions from inside the booth, as
// a hostile agent's code would: the first writes into the tape's folder,
// the second puts a file under one the agent made a plain file in the
// booth, after a write that would stage.
const controlAgent = controlCall + `tx = call("tx", {})["tx"]
call("tx/%s/write" % tx, {"path": "tapes/jukebox.json", "content": '{"command": ["sh", "-c", "id > pwned"]}'})
print("planted", call("tx/%s/commit" % tx, {}))
open("blocker", "w").write("a file")
tx = call("tx", {})["tx"]
call("tx/%s/write" % tx, {"path": "a-config.txt", "content": "half"})
call("tx/%s/write" % tx, {"path": "blocker/b-config.txt", "content": "other half"})
print("split", call("tx/%s/commit" % tx, {}))
`

// TestBoothKeepsControlTransactionsWhole: a booth run's control-API
// transactions stage over the real workspace, outside the agent's mount
// namespace, and were staged into the booth whatever they held: the
// agent overwrote or deleted its own tape, or planted a jukebox.json the
// user's next jukebox test ran, through the folder the booth keeps
// read-only for it. And a transaction that could not all be staged had
// its first changes committed alone. Such a commit is refused whole, when
// the agent asks for it (a sandbox violation, a conflict), and the
// transaction left open is rolled back at the run's end.
func TestBoothKeepsControlTransactionsWhole(t *testing.T) {
	py := testenv.RequirePython(t)
	ws := t.TempDir()
	tapes := filepath.Join(ws, "tapes")
	if err := os.Mkdir(tapes, 0o755); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(tapes, "run.jbx")
	var out, notice lockedBuffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{Tape: tape,
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", controlAgent}, Dir: ws, Env: cleanEnv(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitAlways, Notice: &notice}}})
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v\n%s", err, out.String())
	}
	for _, gone := range []string{"tapes/jukebox.json", "a-config.txt", "blocker/b-config.txt"} {
		if _, err := os.Stat(filepath.Join(ws, gone)); err == nil {
			t.Errorf("%s was committed\n%s%s", gone, out.String(), notice.String())
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "blocker")); err != nil || string(b) != "a file" {
		t.Errorf("the agent's own write in the booth was not committed: %q %v", b, err)
	}
	for _, want := range []string{
		"planted {'error': {'message': 'jukebox: not committed into the booth: it changes tapes/jukebox.json, which the booth keeps from the agent (the tape being recorded)', 'type': 'sandbox_violation'}}",
		"split {'error': {'conflicts': [{'path': 'blocker', 'reason': 'it makes the folder blocker, which is a file in the booth'}], 'message': 'jukebox: not committed into the booth: it makes the folder blocker, which is a file in the booth', 'type': 'commit_conflict'}}",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the agent was not told %q:\n%s", want, out.String())
		}
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	var reasons bytes.Buffer
	for f, err := range tp.Frames(tapefmt.KindTxRollback) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		reasons.WriteString(p.(*tapefmt.TxRollback).Reason + "\n")
	}
	if strings.Count(reasons.String(), "the run ended with the transaction open") != 2 {
		t.Errorf("the tape's tx.rollback reasons:\n%s", reasons.String())
	}
}

// seeingAgent commits control-API transactions from inside the booth and
// reads what it committed, as an agent using the Python SDK does: it
// writes a file, finds it, appends to it itself, and deletes another.
const seeingAgent = controlCall + `tx = call("tx", {})["tx"]
call("tx/%s/write" % tx, {"path": "notes/plan.md", "content": "first draft\n"})
print("committed", call("tx/%s/commit" % tx, {}).get("committed"))
print("sees", open("notes/plan.md").read().strip())
with open("notes/plan.md", "a") as f:
    f.write("and the agent's own line\n")
tx = call("tx", {})["tx"]
call("tx/%s/delete" % tx, {"path": "old.txt"})
print("deleted", call("tx/%s/commit" % tx, {}).get("committed"), os.path.exists("old.txt"))
`

// TestBoothAgentSeesWhatItCommitted: under record --booth, an SDK commit
// was staged into the booth only when the agent ended, so the agent did
// not find a file it had just committed (nor miss one it had deleted).
// The commit now reaches the agent's view at once, in the overlay and in
// a copy; the agent's own writing after it stays, and the booth settles
// it all with the run: committed whole, or rolled back leaving nothing.
func TestBoothAgentSeesWhatItCommitted(t *testing.T) {
	py := testenv.RequirePython(t)
	for _, mode := range []sandbox.Mode{sandbox.ModeOverlay, sandbox.ModeCopy} {
		for _, policy := range []engine.CommitPolicy{engine.CommitAlways, engine.CommitNever} {
			t.Run(string(mode)+"/"+string(policy), func(t *testing.T) {
				ws := t.TempDir()
				if err := os.WriteFile(filepath.Join(ws, "old.txt"), []byte("old\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				var out, notice lockedBuffer
				res, err := engine.Record(context.Background(), engine.RecordOptions{Tape: filepath.Join(t.TempDir(), "run.jbx"),
					RunOptions: engine.RunOptions{Argv: []string{py, "-c", seeingAgent}, Dir: ws, Env: cleanEnv(), Stdout: &out, Stderr: &out,
						Booth: &engine.BoothOptions{Commit: policy, Mode: mode, Notice: &notice}}})
				if errors.Is(err, sandbox.ErrCannotConfine) {
					testenv.Unavailable(t, "the overlay booth: "+err.Error(), "run on Linux with unprivileged user namespaces allowed")
				}
				if err != nil || res.End.ExitCode != 0 {
					t.Fatalf("record: %v\n%s%s", err, out.String(), notice.String())
				}
				for _, want := range []string{"committed True\n", "sees first draft\n", "deleted True False\n"} {
					if !strings.Contains(out.String(), want) {
						t.Fatalf("the agent printed\n%s\nwant %q", out.String(), want)
					}
				}
				plan, err := os.ReadFile(filepath.Join(ws, "notes", "plan.md"))
				_, oldErr := os.Stat(filepath.Join(ws, "old.txt"))
				if policy == engine.CommitNever {
					if err == nil || oldErr != nil {
						t.Fatalf("rolled back, yet notes/plan.md is %q (%v) and old.txt %v", plan, err, oldErr)
					}
					return
				}
				if string(plan) != "first draft\nand the agent's own line\n" || !os.IsNotExist(oldErr) {
					t.Fatalf("committed: notes/plan.md %q (%v), old.txt %v\n%s", plan, err, oldErr, notice.String())
				}
			})
		}
	}
}

// fifoAgent plants a FIFO in the booth where its transaction writes a
// file, and commits.
const fifoAgent = controlCall + `os.mkfifo("pipe.txt")
tx = call("tx", {})["tx"]
call("tx/%s/write" % tx, {"path": "pipe.txt", "content": "x"})
print("fifo", call("tx/%s/commit" % tx, {}))
`

// TestBoothCommitWaitsForNoReader: the commit writes into the agent's view,
// where the agent may have put anything at the path; a FIFO there would
// have held the commit, and the run's end with it, until something read
// it. The commit fails at once instead, naming the path.
func TestBoothCommitWaitsForNoReader(t *testing.T) {
	py := testenv.RequirePython(t)
	ws := t.TempDir()
	var out, notice lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := engine.Record(ctx, engine.RecordOptions{Tape: filepath.Join(t.TempDir(), "run.jbx"),
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", fifoAgent}, Dir: ws, Env: cleanEnv(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &notice}}})
	if errors.Is(err, sandbox.ErrCannotConfine) {
		testenv.Unavailable(t, "the overlay booth: "+err.Error(), "run on Linux with unprivileged user namespaces allowed")
	}
	if err != nil || res.End.ExitCode != 0 || ctx.Err() != nil {
		t.Fatalf("record: %v (%v)\n%s%s", err, ctx.Err(), out.String(), notice.String())
	}
	if want := "committing into the booth's view of the workspace, write pipe.txt: "; !strings.Contains(out.String(), want) {
		t.Fatalf("the agent was told\n%s\nwant %q", out.String(), want)
	}
}

// TestBoothReplayFindsWhatWasCommitted: a replay answers an SDK commit from
// the tape and commits nothing, so the agent, reading back what it had
// committed, failed in any folder but the recorded one (a clean checkout,
// a fork's booth): replay --booth and a fork before its fork point could
// not run such an agent. In a booth run the recorded commit's changes are
// put into the agent's view as the commit is answered: the replay in a
// fresh folder prints what the recording printed, and rolls back clean.
func TestBoothReplayFindsWhatWasCommitted(t *testing.T) {
	py := testenv.RequirePython(t)
	recorded := t.TempDir()
	if err := os.WriteFile(filepath.Join(recorded, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "run.jbx")
	var out, notice lockedBuffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{Tape: tape,
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", seeingAgent}, Dir: recorded, Env: cleanEnv(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &notice}}})
	if errors.Is(err, sandbox.ErrCannotConfine) {
		testenv.Unavailable(t, "the overlay booth: "+err.Error(), "run on Linux with unprivileged user namespaces allowed")
	}
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v\n%s%s", err, out.String(), notice.String())
	}
	fresh := t.TempDir()
	if err := os.WriteFile(filepath.Join(fresh, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rout lockedBuffer
	rres, err := engine.Replay(context.Background(), engine.ReplayOptions{From: tape, Tape: filepath.Join(t.TempDir(), "replay.jbx"),
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", seeingAgent}, Dir: fresh, Env: cleanEnv(), Stdout: &rout, Stderr: &rout,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &rout}}})
	if err != nil || rres.End.ExitCode != 0 || rres.OutputSame == nil || !*rres.OutputSame {
		t.Fatalf("replay: %v, exit %d\n%s", err, rres.End.ExitCode, rout.String())
	}
	if ents, _ := os.ReadDir(fresh); len(ents) != 1 {
		t.Fatalf("the rolled-back replay left %v", ents)
	}
}

// notesAgent asks the model three times and, after each answer, commits
// the notes file with the answer added, reading it back through the
// workspace as a plain agent would: notes.md holds every answer so far.
const notesAgent = controlCall + `msgs = [{"role": "system", "content": "You keep notes."}]
for step in range(3):
    msgs.append({"role": "user", "content": "step %d" % step})
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        json.dumps({"model": "demo-large", "messages": msgs}).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    ans = json.load(urllib.request.urlopen(req))["choices"][0]["message"]["content"]
    msgs.append({"role": "assistant", "content": ans})
    prev = open("notes.md").read() if os.path.exists("notes.md") else ""
    tx = call("tx", {})["tx"]
    call("tx/%s/write" % tx, {"path": "notes.md", "content": prev + "%d. %s\n" % (step, ans[:30])})
    call("tx/%s/commit" % tx, {})
    print("step", step, "notes hold", len(open("notes.md").read().splitlines()), "lines")
`

// TestBoothForkFindsWhatWasCommitted: a fork runs in the booth and answers
// the SDK commits before its fork point from the parent tape, which
// committed nothing: the agent, reading back its notes, found them empty
// (or missing) and its notes lost every step before the fork point. The
// parent's commits are now in the fork's view as it replays them, and the
// live ones after the fork point add to them.
func TestBoothForkFindsWhatWasCommitted(t *testing.T) {
	py := testenv.RequirePython(t)
	srv := startModel(t, nil)
	ups := map[string]string{"openai": srv.OpenAIBaseURL()}
	parent := filepath.Join(t.TempDir(), "run.jbx")
	var out lockedBuffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{Tape: parent, Upstreams: ups,
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", notesAgent}, Dir: t.TempDir(), Env: cleanEnv(), Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitNever, Notice: &out}}})
	if errors.Is(err, sandbox.ErrCannotConfine) {
		testenv.Unavailable(t, "the overlay booth: "+err.Error(), "run on Linux with unprivileged user namespaces allowed")
	}
	if err != nil || res.End.ExitCode != 0 {
		t.Fatalf("record: %v\n%s", err, out.String())
	}
	tp, err := tapefmt.Open(parent)
	if err != nil {
		t.Fatal(err)
	}
	var calls []uint64
	for f, err := range tp.Frames(tapefmt.KindLLMRequest) {
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, f.Seq)
	}
	tp.Close()
	if len(calls) != 3 {
		t.Fatalf("%d model calls recorded, want 3", len(calls))
	}
	ws := t.TempDir()
	var fout lockedBuffer
	fres, err := engine.Fork(context.Background(), engine.ForkOptions{Parent: parent, Frame: calls[2], Tape: filepath.Join(t.TempDir(), "fork.jbx"),
		Overrides: engine.Overrides{Model: "demo-small"}, Upstreams: ups,
		RunOptions: engine.RunOptions{Argv: []string{py, "-c", notesAgent}, Dir: ws, Env: cleanEnv(), Stdout: &fout, Stderr: &fout,
			Booth: &engine.BoothOptions{Commit: engine.CommitAlways, Notice: &fout}}})
	if err != nil || fres.End.ExitCode != 0 || fres.Divergence != nil {
		t.Fatalf("fork: %v\n%s", err, fout.String())
	}
	for i := range 3 {
		if want := fmt.Sprintf("step %d notes hold %d lines\n", i, i+1); !strings.Contains(fout.String(), want) {
			t.Fatalf("the fork's agent printed\n%s\nwant %q", fout.String(), want)
		}
	}
	notes, err := os.ReadFile(filepath.Join(ws, "notes.md"))
	if err != nil || strings.Count(string(notes), "\n") != 3 || !strings.HasPrefix(string(notes), "0. ") {
		t.Fatalf("the fork committed notes.md %q (%v), want the three steps", notes, err)
	}
}
