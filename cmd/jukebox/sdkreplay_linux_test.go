package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// txAgent asks the model, stages a file, SQLite, PostgreSQL and a shell
// command in one turn's transaction (committed), rolls a second one back,
// and asks the model again.
const txAgent = `
import json, os, sys, urllib.request
from jukebox import Jukebox
dsn = os.environ["JUKEBOX_PG_DSN"]
jb = Jukebox()
def ask(q):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", method="POST",
        data=json.dumps({"model": "demo-large", "messages": [{"role": "user", "content": q}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req) as r:
        return json.load(r)["choices"][0]["message"]["content"][:30]
print("plan:", ask("plan the refund"))
with jb.record_agent_turn(agent_name="planner", message="stage the refund", model="demo-large", cost_usd=0.001) as tx:
    print("tape:", tx.tape_id)
    tx.stage_file_write("ledger.json", '{"refund_usd": REFUND}')
    tx.stage_sql("books.db", "CREATE TABLE IF NOT EXISTS refunds (usd REAL)")
    tx.stage_sql("books.db", "INSERT INTO refunds VALUES (?)", [12.5])
    print("sqlite:", tx.stage_sql("books.db", "SELECT count(*) FROM refunds"))
    print("pg:", tx.stage_sql(dsn, "SELECT 40 + $1::int AS answer", [2]))
    print("shell:", tx.run_shell("cat ledger.json").stdout)
    print("commit:", tx.commit())
with jb.record_agent_turn(agent_name="checker", message="check") as tx:
    tx.stage_file_write("draft.txt", "x")
    tx.rollback("not needed")
print("check:", ask("check the ledger"))
`

// txFixture records txAgent in a new folder: the folder, the tape, and
// the environment the agent ran with.
func txFixture(t *testing.T) (dir string, env []string) {
	t.Helper()
	python := testenv.RequirePython(t)
	dsn := testenv.RequirePostgres(t)
	url, stop, _ := startDemoModel(t, &DemoModelCmd{Addr: "127.0.0.1:0", Quiet: true})
	t.Cleanup(func() { stop() })
	dir = t.TempDir()
	for name, refund := range map[string]string{"agent.py": "12.5", "other.py": "13"} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(txAgent, "REFUND", refund)), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(dir, "inside.py"), []byte(txInside), 0o644))
	env = append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), pyCompiled,
		"PYTHONPATH="+filepath.Join(testenv.RepoRoot(t), "python"), "OPENAI_BASE_URL="+url+"/v1",
		"OPENAI_API_KEY=sk-test", "JUKEBOX_PG_DSN="+dsn, "PYTHON="+python)
	out, code := runIn(t, dir, env, "record", "-o", "rec.jbx", "--", python, "agent.py")
	if code != 0 || !strings.Contains(out, "pg: [(42,)]") || !strings.Contains(out, "commit: 6") {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	return dir, env
}

// runIn runs jukebox with args in dir: its output (stdout, then
// stderr) and exit code.
func runIn(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	out, errs, code := runSplit(t, dir, env, args...)
	return out + errs, code
}

// runSplit runs jukebox with args in dir: its stdout, stderr and exit
// code.
func runSplit(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := jukeboxCmd(t.Context(), dir, args...)
	cmd.Env = env
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errs.String(), 0
	case errors.As(err, &ee):
		return out.String(), errs.String(), ee.ExitCode()
	}
	t.Fatalf("jukebox %v: %v", args, err)
	return "", "", 0
}

// TestSDKTransactionsReplay: a run that uses the Python SDK's
// transactions replays (issue 31: the first turn raised "transactions
// run when recording" and the replay served 0 of 4 calls): every
// recorded call and control-API exchange is served, the agent sees the
// same results (stdout identical), exits 0, and nothing is staged or
// applied in the workspace or the database.
func TestSDKTransactionsReplay(t *testing.T) {
	t.Parallel()
	dir, env := txFixture(t)
	before := snapshot(t, dir, "books.db", "ledger.json")
	out, errs, code := runSplit(t, dir, env, "replay", "--strict", "--json", "-o", "rep.jbx", "rec.jbx")
	if code != 0 {
		t.Fatalf("replay --strict: exit %d\n%s%s", code, out, errs)
	}
	var res struct {
		Served        uint64 `json:"served"`
		ControlServed int    `json:"control_served"`
		Unused        int    `json:"unused_calls"`
		OutputSame    bool   `json:"output_same"`
	}
	must(t, json.Unmarshal([]byte(out), &res))
	if res.Served != 2 || res.ControlServed != 13 || res.Unused != 0 || !res.OutputSame {
		t.Errorf("replay served %d calls and %d control exchanges, %d unused, same output %v; want 2, 13, 0, true\n%s",
			res.Served, res.ControlServed, res.Unused, res.OutputSame, out)
	}
	if after := snapshot(t, dir, "books.db", "ledger.json"); after != before {
		t.Errorf("the replay changed the workspace: %s, then %s", before, after)
	}
	// The replay's own tape carries the exchanges: it replays in turn.
	if out, code := runIn(t, dir, env, "replay", "--strict", "rep.jbx"); code != 0 {
		t.Errorf("replay of the replay: exit %d\n%s", code, out)
	}
}

// TestSDKTransactionsDiverge: an agent that stages something else than
// it did is a divergence at that exchange's frame, naming the field.
func TestSDKTransactionsDiverge(t *testing.T) {
	t.Parallel()
	dir, env := txFixture(t)
	write := frameOf(t, dir, env, "rec.jbx", "control", "/write")
	out, code := runIn(t, dir, env, "replay", "rec.jbx", "--", pythonOf(env), "other.py")
	want := "replay diverged at frame " + write + " (step 1): the live POST /_jukebox/v1/tx/"
	if code != ExitDiverged || !strings.Contains(out, want) || !strings.Contains(out, "first at content") {
		t.Errorf("replay of another agent: exit %d, want %d and %q\n%s", code, ExitDiverged, want, out)
	}
}

// TestSDKTransactionsFork: a fork before the transaction runs it live
// (outside the booth: committed to the workspace); a fork after it has
// it answered from the parent, and nothing is applied.
func TestSDKTransactionsFork(t *testing.T) {
	t.Parallel()
	dir, env := txFixture(t)
	first := frameOf(t, dir, env, "rec.jbx", "llm.request", "#0")
	second := frameOf(t, dir, env, "rec.jbx", "llm.request", "#1")
	must(t, os.Remove(filepath.Join(dir, "ledger.json")))
	out, code := runIn(t, dir, env, "fork", "rec.jbx", "--frame", second, "--model", "demo-small", "--no-booth", "-o", "after.jbx")
	if code != 0 || !strings.Contains(out, "pg: [(42,)]") {
		t.Fatalf("fork after the transaction: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ledger.json")); err == nil {
		t.Error("a fork after the transaction applied it again")
	}
	out, code = runIn(t, dir, env, "fork", "rec.jbx", "--frame", first, "--model", "demo-small", "--no-booth", "-o", "before.jbx")
	if code != 0 || !strings.Contains(out, "commit: 6") {
		t.Fatalf("fork before the transaction: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ledger.json")); err != nil || string(b) != `{"refund_usd": 12.5}` {
		t.Errorf("the fork's live transaction left ledger.json %q, %v", b, err)
	}
	if shown, _ := runIn(t, dir, env, "show", "before.jbx"); !strings.Contains(shown, "tx.commit") {
		t.Errorf("the fork's tape holds no commit of its own:\n%s", shown)
	}
}

// txInside asks the model inside its transaction.
const txInside = `
import json, os, urllib.request
from jukebox import Jukebox
jb = Jukebox()
with jb.record_agent_turn(agent_name="a", message="both") as tx:
    tx.stage_file_write("one.txt", "1")
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", method="POST",
        data=json.dumps({"model": "demo-large", "messages": [{"role": "user", "content": "next?"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer sk-test"})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req).read()
    tx.stage_file_write("two.txt", "2")
    print("commit:", tx.commit())
`

// TestSDKTransactionsForkInside: a fork point inside a transaction (begun
// and staged into before it, answered from the parent) begins it for real
// at its first live request and stages again what came before: both
// writes are committed.
func TestSDKTransactionsForkInside(t *testing.T) {
	t.Parallel()
	dir, env := txFixture(t)
	if out, code := runIn(t, dir, env, "record", "-o", "inside.jbx", "--", pythonOf(env), "inside.py"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		must(t, os.Remove(filepath.Join(dir, name)))
	}
	call := frameOf(t, dir, env, "inside.jbx", "llm.request", "#0")
	out, code := runIn(t, dir, env, "fork", "inside.jbx", "--frame", call, "--model", "demo-small", "--no-booth", "-o", "fork.jbx")
	if code != 0 || !strings.Contains(out, "commit: 2") {
		t.Fatalf("fork inside the transaction: exit %d\n%s", code, out)
	}
	if got := snapshot(t, dir, "one.txt", "two.txt"); got != "one.txt:1;two.txt:2;" {
		t.Errorf("the fork committed %s", got)
	}
}

// frameOf is the first frame of kind whose line in `jukebox show`
// contains text.
func frameOf(t *testing.T, dir string, env []string, tape, kind, text string) string {
	t.Helper()
	out, code := runIn(t, dir, env, "show", tape)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if code == 0 && len(f) > 3 && f[3] == kind && strings.Contains(line, text) {
			return f[0]
		}
	}
	t.Fatalf("%s holds no %s frame with %q:\n%s", tape, kind, text, out)
	return ""
}

// pythonOf is the interpreter txFixture put in env.
func pythonOf(env []string) string {
	for _, e := range env {
		if p, ok := strings.CutPrefix(e, "PYTHON="); ok {
			return p
		}
	}
	return "python3"
}

// snapshot is the content of the named files of dir, for comparison.
func snapshot(t *testing.T, dir string, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		must(t, err)
		b.WriteString(n + ":" + string(data) + ";")
	}
	return b.String()
}

// TestTapeForkRaises: Tape.fork raises when the fork's agent fails,
// saying how it ended and why (issue 31: it returned the fork's tape of
// an agent that exited 1).
func TestTapeForkRaises(t *testing.T) {
	t.Parallel()
	dir, env := txFixture(t)
	second := frameOf(t, dir, env, "rec.jbx", "llm.request", "#1")
	script := `
import sys
from jukebox import JukeboxError, Tape
try:
    Tape("rec.jbx").fork(frame=` + second + `, booth=False, output="failed.jbx",
        command=[sys.executable, "-c", "import sys; sys.exit('the agent gave up')"])
except JukeboxError as e:
    print("raised:", e)
else:
    print("returned")
`
	must(t, os.WriteFile(filepath.Join(dir, "forker.py"), []byte(script), 0o644))
	cmd := exec.CommandContext(t.Context(), pythonOf(env), "forker.py")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	// It ended before the fork frame: a divergence, nothing forked.
	if err != nil || !strings.Contains(string(out), "raised: ") ||
		!strings.Contains(string(out), "the agent ended (exit 1) before it asked for the call at the fork frame") ||
		!strings.Contains(string(out), "the agent gave up") {
		t.Errorf("Tape.fork of a failing agent: %v\n%s", err, out)
	}
}

// TestSDKTransactionsInBooth: in a booth run (a fork's, by default) an
// SDK transaction stages into the booth's own transaction, settled with
// the run (here --commit never: nothing reaches the workspace); it was
// refused before, so a fork before a transaction failed.
func TestSDKTransactionsInBooth(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePython(t)
	dir := t.TempDir()
	// The booth's /tmp is private: the package goes into the workspace.
	sdk := filepath.Join(testenv.RepoRoot(t), "python", "jukebox")
	must(t, os.CopyFS(filepath.Join(dir, "sdk", "jukebox"), os.DirFS(sdk)))
	agent := `
from jukebox import Jukebox
jb = Jukebox()
with jb.record_agent_turn(agent_name="a", message="stage") as tx:
    tx.stage_file_write("ledger.json", "{}")
    print("commit:", tx.commit())
with jb.record_agent_turn(agent_name="b", message="drop") as tx:
    tx.stage_file_write("draft.txt", "x")
    tx.rollback("not needed")
`
	must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(agent), 0o644))
	env := append(os.Environ(), mainEnv+"=1", "PYTHONDONTWRITEBYTECODE=1", "PYTHONPATH="+filepath.Join(dir, "sdk"))
	out, code := runIn(t, dir, env, "record", "--booth", "--commit", "never", "-o", "booth.jbx", "--", python, "agent.py")
	if code != 0 || !strings.Contains(out, "commit: 1") || !strings.Contains(out, "write ledger.json") || strings.Contains(out, "draft.txt") {
		t.Fatalf("record --booth: exit %d, want 0, a commit into the booth's change set and no rolled-back file\n%s", code, out)
	}
	for _, name := range []string{"ledger.json", "draft.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s reached the workspace of a booth run that committed nothing", name)
		}
	}
}

// batchAgent stages writes and a delete and commits, either as the SDK
// does (in one batch with the commit) or as an SDK before batches did
// (a request per operation, WIRE=single).
const batchAgent = `
import os
from jukebox import Jukebox
jb = Jukebox()
with jb.record_agent_turn(agent_name="a", message="m") as tx:
    ops = [("write", {"path": "a.txt", "content": "one"}), ("write", {"path": "sub/b.txt", "content": "two"}),
           ("delete", {"path": "old.txt"})]
    for op, body in ops:
        if os.environ.get("WIRE") == "single":
            tx._c.call("POST", f"tx/{tx.tx_id}/{op}", body)
        elif op == "write":
            tx.stage_file_write(body["path"], body["content"])
        else:
            tx.stage_file_delete(body["path"])
    print("commit:", tx.commit())
`

// TestSDKBatchesTapeAsSingleOps: the SDK sends staged writes and deletes
// in a batch with the commit, and each is on the tape as a request of its
// own would be: a tape an SDK wrote a request per operation replays
// strictly with batches, and a tape of batches replays with single
// requests (issue 32: a staged write within 2x a plain write).
func TestSDKBatchesTapeAsSingleOps(t *testing.T) {
	t.Parallel()
	python := testenv.RequirePython(t)
	base := append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), pyCompiled,
		"PYTHONPATH="+filepath.Join(testenv.RepoRoot(t), "python"))
	single := append(append([]string(nil), base...), "WIRE=single")
	for _, c := range []struct {
		name            string
		recEnv, replEnv []string
	}{{"single then batched", single, base}, {"batched then single", base, single}} {
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "agent.py"), []byte(batchAgent), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old"), 0o644))
		tape := strings.ReplaceAll(c.name, " ", "-") + ".jbx"
		out, code := runIn(t, dir, c.recEnv, "record", "-o", tape, "--", python, "agent.py")
		// Three files: a.txt, sub/b.txt and old.txt (the folder sub is
		// not one).
		if code != 0 || !strings.Contains(out, "commit: 3") {
			t.Fatalf("%s: record: exit %d\n%s", c.name, code, out)
		}
		if n := strings.Count(mustShow(t, dir, c.recEnv, tape), "/write"); n != 2 {
			t.Errorf("%s: %d write exchanges on the tape, want 2 (one per operation)", c.name, n)
		}
		if out, code := runIn(t, dir, c.replEnv, "replay", "--strict", tape); code != 0 {
			t.Errorf("%s: replay --strict: exit %d\n%s", c.name, code, out)
		}
	}
}

// mustShow is jukebox show of a tape.
func mustShow(t *testing.T, dir string, env []string, tape string) string {
	t.Helper()
	out, errs, code := runSplit(t, dir, env, "show", tape)
	if code != 0 {
		t.Fatalf("show %s: exit %d\n%s", tape, code, errs)
	}
	return out
}

// replayCompatSDK replays testdata/compat/NAME.jbx strictly, its script
// NAME.py run by today's SDK in a new folder, and returns how many
// control exchanges the tape answered. It fails the test unless the
// replay passed with every recorded call used and the same output, and
// when the replay wrote any of written in the folder.
func replayCompatSDK(t *testing.T, name string, written ...string) (controlServed int) {
	t.Helper()
	python := testenv.RequirePython(t)
	compat := filepath.Join(testenv.RepoRoot(t), "testdata", "compat")
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join(compat, name+".py"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, name+".py"), script, 0o644))
	env := append(os.Environ(), mainEnv+"=1", "JUKEBOX_BIN="+jukeboxBin(), pyCompiled,
		"PYTHONPATH="+filepath.Join(testenv.RepoRoot(t), "python"))
	out, errs, code := runSplit(t, dir, env, "replay", "--strict", "--json", filepath.Join(compat, name+".jbx"), "--", python, name+".py")
	var res struct {
		ControlServed int  `json:"control_served"`
		Unused        int  `json:"unused_calls"`
		OutputSame    bool `json:"output_same"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Unused != 0 || !res.OutputSame {
		t.Fatalf("replay --strict of the earlier release's %s.jbx: exit %d, %+v\n%s%s", name, code, res, out, errs)
	}
	for _, p := range written {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("the replay wrote %s", p)
		}
	}
	return res.ControlServed
}

// TestCompatSDKWritesReplay: a tape of Python SDK transactions recorded
// by an earlier release, whose SDK sent staged writes as JSON batches
// (testdata/compat/sdk-writes-v1.jbx), replays strictly with today's SDK,
// which sends them as binary batches: each write's request, built by the
// server from the binary batch, matches the one the tape holds.
func TestCompatSDKWritesReplay(t *testing.T) {
	t.Parallel()
	if n := replayCompatSDK(t, "sdk-writes-v1", "notes", "data", "out", "empty.txt"); n != 13 {
		t.Errorf("%d control exchanges answered from the tape, want 13", n)
	}
}

// TestCompatSDKTurnsReplay: a tape of Python SDK turns recorded by an
// earlier release, whose SDK began a turn's transaction without a name
// (testdata/compat/sdk-turns-v1.jbx), replays strictly with today's SDK,
// which names it after the turn (so that transactions begun at once
// replay apart): a beginning recorded without a name matches one with.
func TestCompatSDKTurnsReplay(t *testing.T) {
	t.Parallel()
	if n := replayCompatSDK(t, "sdk-turns-v1", "plan.md", "draft.txt", "review"); n != 12 {
		t.Errorf("%d control exchanges answered from the tape, want 12", n)
	}
}
