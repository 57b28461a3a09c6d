//go:build unix

package engine_test

import (
	"context"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/testenv"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestInterruptLeavesAValidTape sends SIGINT to jukebox while the agent
// runs, as Ctrl-C does: the agent gets it, and the tape is closed whole
// with the agent's exit recorded. The test catches the signal as the CLI's
// main does and hands it to the run (RunOptions.Signals): the engine
// installs no handler of its own.
func TestInterruptLeavesAValidTape(t *testing.T) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT)
	defer signal.Stop(sigs)
	agent := `
import signal, sys, time
print("ready", flush=True)
try:
    time.sleep(30)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
`
	tape := filepath.Join(t.TempDir(), "int.jbx")
	var once sync.Once
	res, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{testenv.RequirePython(t), "-c", agent}, Env: cleanEnv(), Stdout: io.Discard, Stderr: io.Discard,
			Signals: sigs, OnEvent: func(e engine.Event) {
				if e.Kind == engine.EventOutput && strings.Contains(string(e.Data), "ready") {
					once.Do(func() { syscall.Kill(syscall.Getpid(), syscall.SIGINT) })
				}
			}},
		Tape: tape})
	if err != nil {
		t.Fatal(err)
	}
	if res.End.ExitCode != 130 || res.End.Reason != "interrupted" {
		t.Fatalf("end = %+v, want exit 130, interrupted", res.End)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	if tp.Recovered() != nil {
		t.Fatalf("the tape was not closed: %+v", tp.Recovered())
	}
	last, _ := tp.Frame(tp.Len() - 1)
	if last.Kind != tapefmt.KindRunEnd {
		t.Fatalf("last frame is %s, want run.end", last.Kind)
	}
	checkTape(t, tape)
}

// slowTerminal takes its time over every write, as a terminal or pipe that
// cannot keep up does.
type slowTerminal struct{ n int }

func (s *slowTerminal) Write(p []byte) (int, error) {
	time.Sleep(250 * time.Millisecond)
	s.n += len(p)
	return len(p), nil
}

// TestSlowTerminalLosesNoOutput: an agent that writes more than a slow
// terminal takes before it exits still has all of its output passed on and
// on the tape.
func TestSlowTerminalLosesNoOutput(t *testing.T) {
	t.Parallel()
	const size = 300_000
	tape := filepath.Join(t.TempDir(), "out.jbx")
	term := &slowTerminal{}
	if _, err := engine.Record(context.Background(), engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{testenv.RequirePython(t), "-c", "import sys; sys.stdout.write('a' * 300000)"},
			Env: cleanEnv(), Stdout: term, Stderr: io.Discard},
		Tape: tape}); err != nil {
		t.Fatal(err)
	}
	checkTape(t, tape)
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	taped := 0
	for f, err := range tp.Frames(tapefmt.KindOutput) {
		if err != nil {
			t.Fatal(err)
		}
		p, _ := f.Decode()
		taped += len(p.(*tapefmt.Output).Data)
	}
	if term.n != size || taped != size {
		t.Fatalf("terminal got %d bytes, tape holds %d; the agent wrote %d", term.n, taped, size)
	}
}
