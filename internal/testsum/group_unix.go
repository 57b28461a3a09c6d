//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, which its
// cancellation kills whole: test2json, the test binary and what the
// tests started.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// stopSignals are the signals that stop the jobs.
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGQUIT}

// execTest replaces this process with the test binary args[0], SIGINT and
// SIGQUIT at their default: test2json, which starts it, ignores them, and
// a test binary that inherits them ignored passes that on to the agents
// its tests start, which then never see an interrupt (go test, which
// converts the output itself, starts test binaries with them at their
// default).
func execTest(args []string) error {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGQUIT) // caught here: their default after exec
	return syscall.Exec(args[0], args, os.Environ())
}
