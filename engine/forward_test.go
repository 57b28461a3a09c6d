//go:build unix

package engine_test

import (
	"context"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/jukebox-os/jukebox/engine"
	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// trapAgent says "ready", then waits; a SIGTERM or SIGHUP makes it say
// which one came and exit 7 or 8. It gives up after a minute (exit 99):
// a signal that never comes fails the test instead of hanging the
// package until go test's -timeout.
const trapAgent = `trap 'echo got TERM; exit 7' TERM
trap 'echo got HUP; exit 8' HUP
echo ready
i=0
while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
echo no signal came; exit 99`

// trapRun records trapAgent and calls act once the agent is ready.
func trapRun(t *testing.T, ctx context.Context, sigs <-chan os.Signal, act func()) (*engine.Result, string, string) {
	t.Helper()
	tape := filepath.Join(t.TempDir(), "trap.jbx")
	var out strings.Builder
	var once sync.Once
	res, err := engine.Record(ctx, engine.RecordOptions{
		RunOptions: engine.RunOptions{Argv: []string{"sh", "-c", trapAgent}, Env: cleanEnv(),
			Stdout: &out, Stderr: io.Discard, Signals: sigs,
			OnEvent: func(e engine.Event) {
				if e.Kind == engine.EventOutput && strings.Contains(string(e.Data), "ready") {
					once.Do(act)
				}
			}},
		Tape: tape})
	if err != nil {
		t.Fatal(err)
	}
	tapetest.Verify(t, tape)
	return res, out.String(), tape
}

// TestSignalsReachTheAgent: a signal handed to the run (as the CLI's main
// hands on SIGTERM and SIGHUP) is forwarded to the agent, which decides
// when the run ends; the run is not marked interrupted or cancelled, and
// the tape is closed whole with the agent's exit.
func TestSignalsReachTheAgent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGTERM, "TERM", 7}, {syscall.SIGHUP, "HUP", 8}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sigs := make(chan os.Signal, 1)
			res, out, _ := trapRun(t, t.Context(), sigs, func() { sigs <- c.sig })
			if !strings.Contains(out, "got "+c.name) {
				t.Errorf("the agent printed %q; it did not get SIG%s", out, c.name)
			}
			if res.End.ExitCode != c.code || res.End.Reason != "" {
				t.Errorf("end = %+v, want exit %d and no reason", res.End, c.code)
			}
		})
	}
}

// TestCancelStopsTheAgent: cancelling the run's context sends the agent
// SIGTERM (SIGKILL only after a grace period), and the tape is closed
// whole, its run.end saying the run was cancelled.
func TestCancelStopsTheAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, out, tape := trapRun(t, ctx, nil, cancel)
	if !strings.Contains(out, "got TERM") {
		t.Errorf("the agent printed %q; it did not get SIGTERM", out)
	}
	if res.End.ExitCode != 7 || res.End.Reason != tapefmt.ReasonCancelled {
		t.Errorf("end = %+v, want exit 7, cancelled", res.End)
	}
	tp, err := tapefmt.Open(tape)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	last, _ := tp.Frame(tp.Len() - 1)
	p, err := last.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if end, ok := p.(*tapefmt.RunEnd); !ok || end.Reason != tapefmt.ReasonCancelled || end.ExitCode != 7 {
		t.Errorf("last frame = %s %+v, want run.end, exit 7, cancelled", last.Kind, p)
	}
}

// TestEngineInstallsNoSignalHandlers: the engine never takes a process's
// signals for itself (os/signal): the CLI's main catches them once and
// hands them to the run.
func TestEngineInstallsNoSignalHandlers(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == "os/signal" {
				t.Errorf("%s imports os/signal: the engine takes signals from RunOptions.Signals, not the process", name)
			}
		}
	}
}
