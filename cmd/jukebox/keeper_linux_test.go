package main

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jukebox-os/jukebox/internal/testenv"
)

// grandchildPy writes the pid of a process the agent's wrapper started
// to argv[1] and sleeps. With argv[2] == "setsid" that process is a
// daemon: forked twice, in a session of its own, its parent gone.
const grandchildPy = `import os, sys, time
if sys.argv[2] == "setsid":
    if os.fork():
        os.wait()
        time.sleep(600)
        sys.exit(0)
    os.setsid()
    if os.fork():
        os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(600)
`

// TestKillNineEndsTheAgentsTree: jukebox record outside the booth, killed
// with SIGKILL, takes the agent's whole tree with it: a process that the
// agent's wrapper (sh -c) started, and a double-forked daemon that left
// its session. The run's folder in the temporary folder (the CA bundle
// and the Node.js preload) goes too: the keeper removes it.
func TestKillNineEndsTheAgentsTree(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	for _, how := range []string{"wrapped", "setsid"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			script := filepath.Join(dir, "g.py")
			must(t, os.WriteFile(script, []byte(grandchildPy), 0o644))
			agent := `echo "$SSL_CERT_FILE" > "$2.bundle"; "$0" "$1" "$2" "$3" & wait`
			cmd := exec.Command(os.Args[0], "record", "-o", filepath.Join(dir, "k.jbx"), "--",
				"sh", "-c", agent, py, script, pidFile, how)
			cmd.Env = append(os.Environ(), mainEnv+"=1")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			must(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill() })
			pid := testenv.PidFile(t, pidFile)
			must(t, cmd.Process.Signal(syscall.SIGKILL))
			cmd.Wait()
			if !testenv.Gone(pid, 20*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("pid %d (%s) outlived jukebox's kill -9; stderr:\n%s", pid, how, stderr.String())
			}
			bundle, err := os.ReadFile(pidFile + ".bundle")
			must(t, err)
			run := filepath.Dir(strings.TrimSpace(string(bundle)))
			if !strings.HasPrefix(filepath.Base(run), "jukebox-run-") {
				t.Fatalf("SSL_CERT_FILE %q is not in a run's folder", bundle)
			}
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Lstat(run); errors.Is(err, fs.ErrNotExist) {
					break
				}
				if time.Now().After(deadline) {
					os.RemoveAll(run)
					t.Fatalf("the run's folder %s outlived jukebox's kill -9 (%s)", run, how)
				}
			}
		})
	}
}

// TestRepeatedInterruptEndsAnAgentThatIgnoresIt: an agent that ignores
// SIGINT (and whose wrapper does) is killed, whole tree, by a second
// SIGINT to jukebox (before the grace of the first ends), and jukebox exits 130, as the booth does.
func TestRepeatedInterruptEndsAnAgentThatIgnoresIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := `trap '' INT; sh -c 'trap "" INT; echo ready; while :; do sleep 0.05; done' & wait; echo wrapper-exits`
	cmd := exec.Command(os.Args[0], "record", "-o", filepath.Join(dir, "i.jbx"), "--", "sh", "-c", agent)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "ready" {
		cmd.Process.Kill()
		t.Fatalf("the agent did not start: %q; stderr:\n%s", lines.Text(), stderr.String())
	}
	// Ctrl-C again and again, as a user would, until jukebox is gone: two
	// signals sent at once may arrive as one.
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	for lines.Scan() {
	}
	cmd.Wait()
	close(stop)
	if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
		t.Fatalf("jukebox exit %d, want %d; stderr:\n%s", code, ExitInterrupted, stderr.String())
	}
}

// TestKeeperKilledByTheAgent: an agent that kills its keeper ($PPID of
// the wrapper) leaves its group behind; jukebox, seeing the keeper gone
// without a report, kills that group: the grandchild does not outlive
// the run.
func TestKeeperKilledByTheAgent(t *testing.T) {
	t.Parallel()
	py := testenv.RequirePython(t)
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "g.py")
	must(t, os.WriteFile(script, []byte(grandchildPy), 0o644))
	agent := `"$0" "$1" "$2" wrapped & while [ ! -e "$2" ]; do sleep 0.02; done; kill -9 $PPID; wait`
	cmd := exec.Command(os.Args[0], "record", "-o", filepath.Join(dir, "k.jbx"), "--", "sh", "-c", agent, py, script, pidFile)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	t.Cleanup(func() { cmd.Process.Kill() })
	pid := testenv.PidFile(t, pidFile)
	cmd.Wait()
	if !testenv.Gone(pid, 20*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("pid %d outlived the run whose agent killed its keeper; stderr:\n%s", pid, stderr.String())
	}
}

// TestKilledBoothRunFolderSwept: a booth run killed with -9 leaves its
// run folder (its agent runs under the booth's init, not under the
// keeper, which removes the folder of a run outside the booth); the next
// run beside it removes it, and leaves a live run's folder alone.
func TestKilledBoothRunFolderSwept(t *testing.T) {
	t.Parallel()
	requireConfinedBooth(t)
	tmp := t.TempDir() // the runs' TMPDIR, where their folders go
	runs := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "jukebox-run-*"))
		return m
	}
	start := func(name string) (*exec.Cmd, string) {
		cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "--booth", "--commit", "never", "-o", filepath.Join(t.TempDir(), name+".jbx"),
			"--", "sh", "-c", "echo ready; exec sleep 60")
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		out, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("%s: the agent did not start: %q, %v", name, line, err)
		}
		return cmd, name
	}
	killed, _ := start("killed")
	before := runs()
	if len(before) != 1 {
		t.Fatalf("run folders while one run lives: %q, want one", before)
	}
	must(t, killed.Process.Signal(syscall.SIGKILL))
	killed.Wait()
	live, _ := start("live") // its sweep leaves the folder of a run that lives
	var liveRun string
	for _, r := range runs() {
		if r != before[0] {
			liveRun = r
		}
	}
	// A plain run's sweep, beside them, removes the killed run's folder
	// (its start's sweep ends before its end), not the live run's.
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "record", "-o", filepath.Join(t.TempDir(), "next.jbx"), "--", "true")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the next run: %v\n%s", err, out)
	}
	if _, err := os.Lstat(before[0]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed booth run's folder %s is still there after the next run (%v)", before[0], err)
	}
	if _, err := os.Lstat(liveRun); liveRun == "" || err != nil {
		t.Errorf("the live booth run's folder %q was removed: %v", liveRun, err)
	}
	live.Process.Signal(syscall.SIGKILL)
}
