//go:build linux

package engine_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestBoothCommitRefusedStaysOpen: a commit refused at the last moment
// (here the user edits the same file while the prompt is up) leaves the
// transaction open, and the result says so: never "rolled back".
func TestBoothCommitRefusedStaysOpen(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("orig\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tape := filepath.Join(t.TempDir(), "booth.jbx")
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", "echo mine > a.txt"}, Dir: ws, Env: cleanEnv(),
			Stdout: io.Discard, Stderr: io.Discard,
			Booth: &engine.BoothOptions{Commit: engine.CommitAsk, Notice: io.Discard, Ask: func(sandbox.ChangeSet, []engine.RootChanges, []engine.OutboxResult, []tapefmt.SQLSession) (bool, error) {
				return true, os.WriteFile(filepath.Join(ws, "a.txt"), []byte("theirs\n"), 0o644)
			}}},
		Tape: tape})
	var ce *sandbox.ConflictError
	if !errors.As(err, &ce) || res == nil || res.Booth == nil {
		t.Fatalf("record: %v", err)
	}
	if b := res.Booth; b.Committed || !b.Kept || b.Pending {
		t.Fatalf("booth result %+v: want kept open", b)
	}
	infos, _ := sandbox.List(ws, sandbox.Options{})
	if len(infos) != 1 || infos[0].ID != res.Booth.Tx {
		t.Fatalf("open transactions %+v", infos)
	}
	if kinds, _ := boothFrames(t, tape); kinds[tapefmt.KindTxRollback] || kinds[tapefmt.KindTxCommit] {
		t.Fatalf("tape says the transaction ended: %v", kinds)
	}
	if data, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(data) != "theirs\n" {
		t.Fatalf("a.txt = %q", data)
	}
	tx, err := sandbox.Open(ws, res.Booth.Tx, sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
}
