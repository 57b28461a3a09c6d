//go:build linux

package engine_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/sandbox"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// boothRun records sh -c script in a booth over a fresh workspace, in copy
// mode (it needs no namespaces), and returns the result, the error, the
// workspace and the tape.
func boothRun(t *testing.T, script string, o engine.RunOptions, b engine.BoothOptions) (*engine.Result, error, string, string) {
	t.Helper()
	ws, tape := t.TempDir(), filepath.Join(t.TempDir(), "booth.jbx")
	b.Mode, b.Notice = sandbox.ModeCopy, io.Discard
	o.Argv, o.Dir, o.Env, o.Booth = []string{"sh", "-c", script}, ws, cleanEnv(), &b
	o.Stdout, o.Stderr = io.Discard, io.Discard
	res, err := engine.Record(t.Context(), engine.RecordOptions{RunOptions: o, Tape: tape})
	tapetest.Verify(t, tape)
	return res, err, ws, tape
}

// rollbackReason is the reason of the tape's tx.rollback frame, or "".
func rollbackReason(t *testing.T, tape string) string {
	t.Helper()
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	for f, err := range tp.Frames(tapefmt.KindTxRollback) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		return p.(*tapefmt.TxRollback).Reason
	}
	return ""
}

// TestBoothAskWithNoOneToAsk: the ask policy without BoothOptions.Ask is
// ErrNoAsk, in the engine's words (the CLI words it with its flags), and
// the changes are rolled back.
func TestBoothAskWithNoOneToAsk(t *testing.T) {
	t.Parallel()
	res, err, ws, tape := boothRun(t, "echo hi > made.txt", engine.RunOptions{}, engine.BoothOptions{Commit: engine.CommitAsk})
	if !errors.Is(err, engine.ErrNoAsk) {
		t.Fatalf("err = %v, want ErrNoAsk", err)
	}
	if strings.Contains(err.Error(), "--") {
		t.Errorf("the engine's error names a flag: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(ws, "made.txt")); serr == nil || res.Booth.Committed {
		t.Fatal("made.txt was committed with no one to ask")
	}
	if got := rollbackReason(t, tape); got != engine.ErrNoAsk.Error() {
		t.Errorf("tx.rollback reason %q, want %q", got, engine.ErrNoAsk.Error())
	}
}

// TestBoothStopsOnSignal: in the booth, the first signal handed to the run
// is passed on to the agent (SIGTERM ends this one); the run is marked
// interrupted and, under on-success, its changes are kept open, never
// committed.
func TestBoothStopsOnSignal(t *testing.T) {
	t.Parallel()
	sigs := make(chan os.Signal, 1)
	var once sync.Once
	o := engine.RunOptions{Signals: sigs, OnEvent: func(e engine.Event) {
		if e.Kind == engine.EventOutput && strings.Contains(string(e.Data), "ready") {
			once.Do(func() { sigs <- syscall.SIGTERM })
		}
	}}
	res, err, ws, _ := boothRun(t, "echo hi > made.txt; echo ready; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done", o, engine.BoothOptions{Commit: engine.CommitOnSuccess})
	if err != nil {
		t.Fatal(err)
	}
	if res.End.Reason != tapefmt.ReasonInterrupted {
		t.Errorf("end = %+v, want interrupted", res.End)
	}
	if _, serr := os.Stat(filepath.Join(ws, "made.txt")); serr == nil || res.Booth.Committed {
		t.Error("made.txt was committed after the run was stopped")
	}
	if !res.Booth.Kept || !res.Booth.Interrupted {
		t.Errorf("booth %+v, want kept open and interrupted", res.Booth)
	}
}
