//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/tapetest"
	"github.com/jukebox-os/jukebox/tapefmt"
)

// TestMainContextCancelsOnSignal: the context main makes is cancelled by
// SIGTERM, which also arrives on the channel main hands to the runs, and
// the process lives on. Not parallel: it signals the test process.
func TestMainContextCancelsOnSignal(t *testing.T) {
	ctx, sigs, stop := notifySignals(t.Context())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not cancel main's context")
	}
	select {
	case s := <-sigs:
		if s != syscall.SIGTERM {
			t.Errorf("the runs' channel got %v, want SIGTERM", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not reach the runs' channel")
	}
}

// TestSignalsReachTheAgent runs jukebox record (this test binary running
// main) on an agent that traps signals, and signals jukebox alone, as kill
// or a supervisor does: the agent gets SIGTERM, SIGHUP and SIGINT (no
// terminal sent it these), jukebox waits for it to exit, exits with its
// code (130 for SIGINT, as in the booth) and leaves a whole tape.
func TestSignalsReachTheAgent(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sig    syscall.Signal
		name   string
		code   int
		reason tapefmt.EndReason
	}{
		{syscall.SIGTERM, "TERM", 7, ""},
		{syscall.SIGHUP, "HUP", 8, ""},
		{syscall.SIGINT, "INT", 9, tapefmt.ReasonInterrupted}, // jukebox exits 130
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tape := filepath.Join(t.TempDir(), "sig.jbx")
			agent := `trap 'echo got TERM; exit 7' TERM; trap 'echo got HUP; exit 8' HUP; trap 'echo got INT; exit 9' INT
echo ready; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
			cmd := exec.Command(os.Args[0], "record", "-o", tape, "--", "sh", "-c", agent)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				cmd.Process.Kill()
				t.Fatalf("the agent did not start: %q; stderr:\n%s", lines.Text(), stderr.String())
			}
			cmd.Process.Signal(c.sig)
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			err = cmd.Wait()
			if !strings.Contains(rest.String(), "got "+c.name) {
				t.Errorf("the agent printed %q; it did not get SIG%s", rest.String(), c.name)
			}
			want := c.code // the agent's
			if c.sig == syscall.SIGINT {
				want = ExitInterrupted // as in the booth
			}
			if cmd.ProcessState.ExitCode() != want {
				t.Fatalf("jukebox: %v, want exit %d; stderr:\n%s", err, want, stderr.String())
			}
			tapetest.Verify(t, tape)
			end := lastRunEnd(t, tape)
			if end.ExitCode != c.code || end.Reason != c.reason {
				t.Errorf("run.end %+v, want exit %d, reason %q", end, c.code, c.reason)
			}
		})
	}
}

// lastRunEnd is the tape's last frame, which must be run.end.
func lastRunEnd(t *testing.T, path string) *tapefmt.RunEnd {
	t.Helper()
	tp, err := tapefmt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Close()
	f, err := tp.Frame(tp.Len() - 1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Decode()
	end, ok := p.(*tapefmt.RunEnd)
	if err != nil || !ok {
		t.Fatalf("the last frame is %s (%v), not run.end", f.Kind, err)
	}
	return end
}
