//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
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
// its first changes committed alone. Such a transaction is now left out
// whole, said so on the tape and in the notice.
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
	for _, want := range []string{"which the booth keeps from the agent", "which is no folder in the booth"} {
		if !strings.Contains(notice.String(), want) {
			t.Errorf("the notice does not say %q:\n%s", want, notice.String())
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
	if strings.Count(reasons.String(), "not staged into the booth") != 2 {
		t.Errorf("the tape's tx.rollback reasons:\n%s", reasons.String())
	}
}
