//go:build linux

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestBoothRefusedIsKept: an agent that leaves a fifo beside a venv-like
// absolute symlink, `ln -s .. up` and a write, run with --commit always.
// The change set is whole (the links and the write are taped as
// file.change frames), the fifo is a refused file.change with its reason,
// and the transaction is kept open, neither committed nor rolled back.
func TestBoothRefusedIsKept(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tape := filepath.Join(t.TempDir(), "refused.jbx")
	script := "echo hi > a.txt; mkdir -p .venv/bin; ln -s /usr/bin/python3 .venv/bin/python; ln -s .. up; mkfifo pipe; exit 3"
	var out bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", script}, Dir: ws, Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitAlways, Mode: sandbox.ModeCopy, Notice: &out}},
		Tape: tape})
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out.String())
	}
	b := res.Booth
	if res.End.ExitCode != 3 || b == nil || !b.Refused || !b.Kept || b.Committed {
		t.Fatalf("exit %d, booth %+v", res.End.ExitCode, b)
	}
	if len(b.Changes.Refused) != 1 || b.Changes.Refused[0].Path != "pipe" || b.Changes.Refused[0].Kind != sandbox.RefusedFIFO {
		t.Fatalf("refused %+v", b.Changes.Refused)
	}
	if _, err := os.Lstat(filepath.Join(ws, "a.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a.txt reached the workspace: %v", err)
	}
	tx, err := sandbox.Open(ws, b.Tx, sandbox.Options{})
	if err != nil {
		t.Fatalf("the transaction is not open: %v", err)
	}
	cs, err := tx.Diff()
	if err != nil || len(cs.Changes) != len(b.Changes.Changes) || len(cs.Refused) != 1 {
		t.Fatalf("reopened change set %+v, %v", cs, err)
	}
	checkTape(t, tape)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	ops := map[string]tapefmt.FileChange{}
	kinds := map[tapefmt.Kind]bool{}
	for f, err := range tp.Frames() {
		if err != nil {
			t.Fatal(err)
		}
		kinds[f.Kind] = true
		if p, err := f.Decode(); err == nil {
			if fc, ok := p.(*tapefmt.FileChange); ok {
				ops[fc.Path] = *fc
			}
		}
	}
	if kinds[tapefmt.KindTxCommit] || kinds[tapefmt.KindTxRollback] {
		t.Errorf("a kept transaction was taped as settled: %v", kinds)
	}
	if fc := ops["pipe"]; fc.Op != tapefmt.OpRefused || fc.Refused != tapefmt.RefusedFIFO || fc.Reason == "" {
		t.Errorf("pipe on the tape: %+v", fc)
	}
	if fc := ops[".venv/bin/python"]; fc.Op != tapefmt.OpSymlink || fc.Target != "/usr/bin/python3" {
		t.Errorf(".venv/bin/python on the tape: %+v", fc)
	}
	if fc := ops["up"]; fc.Op != tapefmt.OpSymlink || fc.Target != ".." {
		t.Errorf("up on the tape: %+v", fc)
	}
	if fc := ops["a.txt"]; fc.Op != tapefmt.OpWrite || fc.Body.IsZero() {
		t.Errorf("a.txt on the tape: %+v", fc)
	}
}

// TestBoothKeepAlwaysKeeps: with Keep, a decision that fails (ask with no
// one to ask) keeps the transaction instead of rolling it back.
func TestBoothKeepAlwaysKeeps(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	var out bytes.Buffer
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "echo hi > a.txt"}, Dir: ws, Stdout: &out, Stderr: &out,
			Booth: &engine.BoothOptions{Commit: engine.CommitAsk, Keep: true, Mode: sandbox.ModeCopy, Notice: &out}},
		Tape: filepath.Join(t.TempDir(), "keep.jbx")})
	if !errors.Is(err, engine.ErrNoAsk) || res == nil || res.Booth == nil || !res.Booth.Kept {
		t.Fatalf("record: %v, %+v", err, res)
	}
	if _, err := sandbox.Open(ws, res.Booth.Tx, sandbox.Options{}); err != nil {
		t.Fatalf("the transaction was not kept: %v", err)
	}
}
