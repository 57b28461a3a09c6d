//go:build unix

package keeper

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

func TestMain(m *testing.M) {
	MaybeRun()
	os.Exit(m.Run())
}

// modes are the keepers a test runs: this system's own, and the process
// group keeper macOS uses (run here through Env's group prefix).
var modes = map[string]string{"native": "", "group": groupPrefix}

// started is a keeper running this test binary as its agent's keeper.
type started struct {
	cmd  *exec.Cmd
	life *os.File // jukebox's end of the lifeline
	rep  *bufio.Reader
	pid  int // the agent's
}

// startKeeper starts a keeper (mode is "" or groupPrefix) of sh -c script
// with grace, and waits for its "started" report.
func startKeeper(t *testing.T, mode, script string, grace time.Duration) *started {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, sh, "sh", "-c", script)
	cmd.Env = append(os.Environ(), Env+"="+mode+grace.String())
	cmd.ExtraFiles = []*os.File{lifeR, repW}
	// Its own group, as jukebox starts it on Linux: the test's signals
	// reach only what the test sends them to.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lifeR.Close()
	repW.Close()
	k := &started{cmd: cmd, life: lifeW, rep: bufio.NewReader(repR)}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if k.pid > 0 {
			syscall.Kill(-k.pid, syscall.SIGKILL)
			syscall.Kill(k.pid, syscall.SIGKILL)
		}
		cmd.Wait()
		lifeW.Close()
		repR.Close()
	})
	line, err := k.rep.ReadString('\n')
	if v, ok := strings.CutPrefix(strings.TrimSpace(line), "started "); err == nil && ok {
		k.pid, err = strconv.Atoi(v)
	}
	if err != nil || k.pid == 0 {
		t.Fatalf("keeper's first report: %q, %v", line, err)
	}
	return k
}

// exited waits up to 20 seconds for the keeper to exit, which it does
// once the agent has.
func (k *started) exited(t *testing.T) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- k.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("keeper: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the keeper is still waiting for its agent")
	}
}

// grandchild is a script whose agent (sh) starts a process in the
// background that writes its pid to file and sleeps, and then waits (or
// with exit, exits at once).
func grandchild(file string, exit bool) string {
	s := `sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 600' "` + file + `" &`
	if exit {
		return s + " sleep 0.2; exit 3"
	}
	return s + " trap '' INT TERM; while :; do sleep 0.05; done"
}

// TestLifelineEndsTheTree: when jukebox's end of the lifeline closes (as
// when jukebox is killed with SIGKILL), the agent and what it started end.
func TestLifelineEndsTheTree(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "pid")
			k := startKeeper(t, mode, grandchild(file, false), time.Minute)
			pid := testenv.PidFile(t, file)
			k.life.Close()
			if !testenv.Gone(pid, 20*time.Second) {
				t.Fatalf("the agent's grandchild %d outlived the lifeline", pid)
			}
			k.exited(t)
		})
	}
}

// TestAgentExitEndsTheTree: once the agent exits, what it left running
// ends, and the keeper reports the agent's own status.
func TestAgentExitEndsTheTree(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "pid")
			k := startKeeper(t, mode, grandchild(file, true), time.Minute)
			pid := testenv.PidFile(t, file)
			var last string
			for {
				line, err := k.rep.ReadString('\n')
				if err != nil {
					break
				}
				last = strings.TrimSpace(line)
			}
			st, err := strconv.Atoi(strings.TrimPrefix(last, "end "))
			if err != nil || syscall.WaitStatus(st).ExitStatus() != 3 {
				t.Fatalf("last report %q: want the agent's exit status 3", last)
			}
			if !testenv.Gone(pid, 20*time.Second) {
				t.Fatalf("the agent's grandchild %d outlived the agent", pid)
			}
		})
	}
}

// TestSecondStopEndsTheTree: an agent that ignores SIGTERM is killed,
// whole tree, by a second stop signal to the keeper before its grace
// ends; each SIGINT is reported.
func TestSecondStopEndsTheTree(t *testing.T) {
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "pid")
			k := startKeeper(t, mode, grandchild(file, false), time.Hour)
			pid := testenv.PidFile(t, file)
			// Signals reach the keeper's group, as the terminal's (Linux)
			// or jukebox's forwarding (the keeper) would.
			target := -k.cmd.Process.Pid
			if mode != "" {
				target = k.cmd.Process.Pid
			}
			syscall.Kill(target, syscall.SIGINT)
			if line, _ := k.rep.ReadString('\n'); strings.TrimSpace(line) != "interrupt" {
				t.Fatalf("report after SIGINT: %q", line)
			}
			syscall.Kill(target, syscall.SIGTERM)
			if !testenv.Gone(pid, 20*time.Second) {
				t.Fatalf("the agent's grandchild %d outlived the second stop", pid)
			}
			k.exited(t)
		})
	}
}

// TestMismatchStartsNothing: a keeper told another build's Fingerprint
// reports Mismatch and exits MismatchStatus before it starts the agent;
// told its own, it keeps as always.
func TestMismatchStartsNothing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	for _, c := range []struct {
		build, report string
		status        int
	}{{"0123", Mismatch, MismatchStatus}, {Fingerprint(), "started", 0}} {
		os.Remove(marker)
		repR, repW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		lifeR, lifeW, _ := os.Pipe()
		cmd := exec.Command(self, "/bin/sh", "sh", "-c", "touch "+marker)
		cmd.Env = append(os.Environ(), Env+"=1s", BuildEnv+"="+c.build)
		cmd.ExtraFiles = []*os.File{lifeR, repW}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lifeR.Close()
		repW.Close()
		all, _ := io.ReadAll(repR) // the keeper's reports, to its exit
		line := string(all)
		lifeW.Close()
		cmd.Wait()
		repR.Close()
		_, ran := os.Stat(marker)
		if !strings.HasPrefix(line, c.report) || cmd.ProcessState.ExitCode() != c.status || (ran == nil) != (c.status == 0) {
			t.Errorf("build %q: reported %q, exit %d, agent ran: %v; want %q, exit %d", c.build, line, cmd.ProcessState.ExitCode(), ran == nil, c.report, c.status)
		}
	}
}

// TestWaitingKeeper: a keeper started ahead of its agent (WaitEnv) starts
// what the lifeline's first line says, with that environment and folder,
// and reports as any keeper; one whose lifeline closes first exits having
// started nothing.
func TestWaitingKeeper(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	start := func() (*exec.Cmd, *os.File, *bufio.Reader) {
		lifeR, lifeW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		repR, repW, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), Env+"=5s", WaitEnv+"=1")
		cmd.ExtraFiles = []*os.File{lifeR, repW}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lifeR.Close()
		repW.Close()
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); repR.Close() })
		return cmd, lifeW, bufio.NewReader(repR)
	}

	dir := t.TempDir()
	cmd, life, rep := start()
	out := cmd.Stdout.(*strings.Builder)
	line := `{"path":"` + sh + `","args":["sh","-c","echo $AGENT_SAYS in $PWD; pwd -P"],"env":["AGENT_SAYS=hello","PWD=` + dir + `"],"dir":"` + dir + `"}` + "\n"
	if _, err := life.WriteString(line); err != nil {
		t.Fatal(err)
	}
	first, _ := rep.ReadString('\n')
	if !strings.HasPrefix(first, "started ") {
		t.Fatalf("first report %q, want started", first)
	}
	rest, _ := io.ReadAll(rep)
	life.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if want := "hello in " + dir + "\n" + real + "\n"; out.String() != want || !strings.HasPrefix(string(rest), "end 0") {
		t.Fatalf("agent printed %q (want %q), reports %q", out.String(), want, rest)
	}

	cmd, life, rep = start()
	life.Close() // jukebox gave the run up before its agent
	if err := cmd.Wait(); err != nil {
		t.Fatalf("a keeper handed nothing: %v", err)
	}
	if rest, _ := io.ReadAll(rep); len(rest) != 0 {
		t.Fatalf("a keeper handed nothing reported %q", rest)
	}
}
