package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ptyJukebox is jukebox (this test binary running main) run as a shell
// runs it: the foreground of a terminal that is its standard streams and
// its controlling terminal, so that /dev/tty is that terminal and Ctrl-C
// typed on it reaches jukebox's group.
type ptyJukebox struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer  // all the terminal showed
	more   chan struct{} // a token when out grew
	done   chan struct{} // closed when the process has been waited for
	shown  chan struct{} // closed when the terminal has no writer left
}

// startPTY starts jukebox with args in dir on a new terminal; it is
// killed if it has not ended after limit.
func startPTY(t *testing.T, dir string, limit time.Duration, args ...string) *ptyJukebox {
	t.Helper()
	master, slave := openPTY(t)
	j := &ptyJukebox{t: t, master: master, more: make(chan struct{}, 1), done: make(chan struct{}), shown: make(chan struct{})}
	j.cmd = exec.Command(os.Args[0], args...)
	j.cmd.Dir = dir
	j.cmd.Env = append(os.Environ(), mainEnv+"=1")
	j.cmd.Stdin, j.cmd.Stdout, j.cmd.Stderr = slave, slave, slave
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	must(t, j.cmd.Start())
	slave.Close()
	timer := time.AfterFunc(limit, func() { j.cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop(); j.cmd.Process.Kill(); <-j.done })
	go j.read()
	go func() { j.cmd.Wait(); close(j.done) }()
	return j
}

// read keeps what the terminal shows until the last writer closes it.
func (j *ptyJukebox) read() {
	defer close(j.shown)
	buf := make([]byte, 4096)
	for {
		n, err := j.master.Read(buf)
		j.mu.Lock()
		j.out.Write(buf[:n])
		j.mu.Unlock()
		select {
		case j.more <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// output is what the terminal has shown so far.
func (j *ptyJukebox) output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// waitFor waits until the output matches re, for at most 20 s.
func (j *ptyJukebox) waitFor(re *regexp.Regexp) {
	j.t.Helper()
	deadline := time.After(20 * time.Second)
	for !re.MatchString(j.output()) {
		select {
		case <-j.more:
		case <-j.done:
			if !re.MatchString(j.output()) {
				j.t.Fatalf("jukebox ended (%v) without showing %v:\n%q", j.cmd.ProcessState, re, j.output())
			}
		case <-deadline:
			j.t.Fatalf("no %v within 20 s:\n%q", re, j.output())
		}
	}
}

// typeIn types s on the terminal.
func (j *ptyJukebox) typeIn(s string) {
	j.t.Helper()
	if _, err := j.master.WriteString(s); err != nil {
		j.t.Fatal(err)
	}
}

// exit waits for jukebox to end and for what it wrote to be read, and
// returns its exit code.
func (j *ptyJukebox) exit() int {
	<-j.done
	select {
	case <-j.shown:
	case <-time.After(10 * time.Second):
		j.t.Errorf("the terminal still has a writer 10 s after jukebox ended")
	}
	return j.cmd.ProcessState.ExitCode()
}

// openTx is the one open booth transaction in ws, or "" when there is none.
func openTx(t *testing.T, ws string) string {
	t.Helper()
	out, errs, err := runBoothCLI(t, "booth", "status", "-C", ws)
	if err != nil {
		t.Fatalf("booth status: %v: %s", err, errs)
	}
	if strings.HasPrefix(out, "no open") {
		return ""
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 {
		t.Fatalf("booth status lists %d transactions:\n%s", len(lines), out)
	}
	return strings.Fields(out)[0]
}

// exists reports whether ws holds name.
func exists(ws, name string) bool {
	_, err := os.Lstat(filepath.Join(ws, name))
	return err == nil
}
