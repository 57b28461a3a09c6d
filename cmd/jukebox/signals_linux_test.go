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

// TestPipedIntoHead: jukebox record (and replay) piped into a reader that
// stops early, as `| head -1` does. jukebox was killed by SIGPIPE at its
// next write, its agent after it, and the tape was left without its end
// (an agent of eight calls kept only run.start). Now the agent's next
// write fails as it would have without jukebox (yes and sh die of
// SIGPIPE, Python raises BrokenPipeError), and the tape is closed, its end
// recorded; jukebox exits with the agent's status.
func TestPipedIntoHead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name, agent string
	}{
		{"yes", "yes"},
		{"sh", "i=0; while [ $i -lt 100000 ]; do echo line $i; i=$((i+1)); done; echo 'not stopped' >&2"},
	} {
		tape := filepath.Join(dir, c.name+".jbx")
		cmd := jukeboxCmd(t.Context(), dir, "record", "-o", tape, "--", "sh", "-c", c.agent)
		out, err := cmd.StdoutPipe()
		must(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		must(t, cmd.Start())
		line, _ := bufio.NewReader(out).ReadString('\n')
		out.Close() // head has what it wanted
		err = cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok && !ee.Exited() {
			t.Fatalf("%s: jukebox %v after its reader left (first line %q)\n%s", c.name, err, line, stderr.String())
		}
		// Killed by SIGPIPE: sh says so in its exit status (128+13).
		if errs := stderr.String(); !strings.Contains(errs, "(agent killed by SIGPIPE)") && !strings.Contains(errs, "(agent exit 141)") ||
			strings.Contains(errs, "not stopped") {
			t.Errorf("%s: want the agent stopped by the broken pipe:\n%s", c.name, errs)
		}
		tp, err := tapefmt.Open(tape)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, stderr.String())
		}
		if k, _, err := tp.KindAt(tp.Len() - 1); tp.Recovered() != nil || err != nil || k != tapefmt.KindRunEnd {
			t.Errorf("%s: the tape is not closed with its run.end (%d frames, recovered %v, last %v %v)", c.name, tp.Len(), tp.Recovered() != nil, k, err)
		}
		tp.Close()
	}
}
