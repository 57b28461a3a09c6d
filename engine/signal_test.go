package engine_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestInterruptLeavesAValidTape sends SIGINT to jukebox while the agent
// runs, as Ctrl-C does: the agent gets it, and the tape is closed whole
// with the agent's exit recorded.
func TestInterruptLeavesAValidTape(t *testing.T) {
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
		RunOptions: engine.RunOptions{Argv: []string{"python3", "-c", agent}, Env: cleanEnv(), Stdout: io.Discard, Stderr: io.Discard,
			OnEvent: func(e engine.Event) {
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
}
