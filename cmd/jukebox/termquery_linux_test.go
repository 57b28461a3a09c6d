package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNoTerminalQueryAtStart: Bubble Tea's package initialisation asked
// the terminal for its background (an OSC 11 query and a cursor-position
// request) in every jukebox command, and waited five seconds where
// nothing answered (script, expect, an editor's terminal): `jukebox
// --version` took 5.09 s under script(1). Nothing is asked of the
// terminal at start now (termquiet is initialised before termenv), and
// the agent and the turntable see TERM as it was.
func TestNoTerminalQueryAtStart(t *testing.T) {
	t.Parallel()
	cmd := jukeboxCmd(t.Context(), t.TempDir(), "--version")
	cmd.Env = append(cmd.Env, "GODEBUG=inittrace=1")
	var trace strings.Builder
	cmd.Stderr = &trace
	must(t, cmd.Run())
	order := map[string]int{}
	for i, line := range strings.Split(trace.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "init" {
			order[f[1]] = i
		}
	}
	quiet, ok1 := order["github.com/jukebox-os/jukebox/internal/termquiet"]
	termenv, ok2 := order["github.com/muesli/termenv"]
	if !ok1 || !ok2 || quiet > termenv {
		t.Errorf("termquiet is not initialised before termenv (lines %d and %d of the init trace)", quiet, termenv)
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"--version"}, {"ls", dir}, {"record", "-o", filepath.Join(dir, "t.jbx"), "--", "sh", "-c", "echo agent TERM=$TERM"}} {
		out := onTerminal(t, dir, args...)
		if strings.Contains(out, "\x1b]11;?") || strings.Contains(out, "\x1b[6n") {
			t.Errorf("jukebox %s asked the terminal: %q", args[0], out)
		}
		if args[0] == "record" && !strings.Contains(out, "agent TERM=xterm-256color") {
			t.Errorf("the agent's TERM is not the terminal's: %q", out)
		}
	}
}

// onTerminal runs jukebox with args on a new terminal nothing answers
// (TERM=xterm-256color), as a shell would, and returns what it showed.
func onTerminal(t *testing.T, dir string, args ...string) string {
	t.Helper()
	master, slave := openPTY(t)
	cmd := exec.Command(jukeboxBin(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "TERM=xterm-256color")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, cmd.Start())
	slave.Close()
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() }) // a hang guard
	defer timer.Stop()
	var out bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break // EIO once the last writer has closed the terminal
		}
	}
	cmd.Wait()
	return out.String()
}
