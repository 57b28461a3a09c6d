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

// TestInterruptOnATerminal runs jukebox record as the foreground of a
// terminal, as a shell runs it. A SIGINT sent to jukebox alone (a
// supervisor, `timeout -s INT`) reaches the agent: it was dropped, taken
// for the terminal's Ctrl-C, which had reached the agent already. The
// terminal's own Ctrl-C reaches the agent once, and jukebox, which never
// saw it, hears of it from the keeper: the run is interrupted, exit 130.
func TestInterruptOnATerminal(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"kill", "ctrl-c"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			master, slave := openPTY(t)
			tape := filepath.Join(t.TempDir(), "int.jbx")
			agent := `trap 'echo got INT; exit 9' INT; echo ready; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`
			cmd := exec.Command(os.Args[0], "record", "-o", tape, "--", "sh", "-c", agent)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			cmd.Stdin = slave
			// A session of its own with the terminal as its controlling
			// terminal: jukebox's group is the terminal's foreground.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			out, err := cmd.StdoutPipe()
			must(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			must(t, cmd.Start())
			timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
			defer timer.Stop()
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				cmd.Process.Kill()
				t.Fatalf("the agent did not start: %q; stderr:\n%s", lines.Text(), stderr.String())
			}
			if how == "kill" {
				cmd.Process.Signal(syscall.SIGINT)
			} else {
				master.Write([]byte{3}) // ^C, as typed
			}
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			cmd.Wait()
			if n := strings.Count(rest.String(), "got INT"); n != 1 {
				t.Fatalf("the agent got SIGINT %d times (%q), want once; jukebox exit %d, stderr:\n%s",
					n, rest.String(), cmd.ProcessState.ExitCode(), stderr.String())
			}
			if cmd.ProcessState.ExitCode() != ExitInterrupted {
				t.Errorf("jukebox exit %d, want %d (the agent's 9, interrupted); stderr:\n%s", cmd.ProcessState.ExitCode(), ExitInterrupted, stderr.String())
			}
			tapetest.Verify(t, tape)
			if end := lastRunEnd(t, tape); end.Reason != tapefmt.ReasonInterrupted || end.ExitCode != 9 {
				t.Errorf("run.end %+v, want the agent's exit 9, interrupted", end)
			}
		})
	}
}
