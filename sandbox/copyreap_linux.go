package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jukebox-os/jukebox/internal/keeper"
	"golang.org/x/sys/unix"
)

// A copy run's agent is not in a PID namespace, so what it starts (a
// backgrounded job, a daemon that left its session) would outlive the
// run and could write the real workspace after the change set was read.
// So the agent is started under a reaper: this executable again, marked
// by reaperEnv, which makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), starts the agent, and once the agent has
// exited kills every process left under it (each orphan of the agent's
// tree is reparented to the reaper) until it has none, then exits as the
// agent did. It leads a session of its own, as the overlay booth's init
// does. This ends the tree of an agent that merely forgets its children;
// an agent that means harm can kill the reaper first, or hand work to a
// process outside its tree (cron, systemd-run, ssh): copy mode does not
// confine.

// reaperEnv marks a process started as a copy run's reaper.
const reaperEnv = "JUKEBOX_COPY_REAPER"

// reaperReady is set once MaybeRunInit ran in this process: only then
// does starting this executable again run the reaper (a program that
// never calls it would run its own main instead).
var reaperReady atomic.Bool

// maybeRunReaper runs the reaper when this process was started as one,
// and then never returns.
func maybeRunReaper() {
	reaperReady.Store(true)
	if _, ok := os.LookupEnv(reaperEnv); !ok {
		return
	}
	os.Unsetenv(reaperEnv)
	os.Exit(runReaper(os.Args[1:]))
}

// copyCommand is the command that runs args with env for a copy run:
// under the reaper where it can be started, else the agent alone in a
// session of its own. Cancelling ctx ends the agent's whole tree.
func copyCommand(ctx context.Context, args, env []string) *exec.Cmd {
	self, err := os.Executable()
	direct := exec.CommandContext(ctx, args[0], args[1:]...)
	direct.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	direct.Env = env
	if err != nil || !reaperReady.Load() || direct.Err != nil {
		direct.Cancel = func() error { return syscall.Kill(-direct.Process.Pid, syscall.SIGKILL) }
		return direct
	}
	cmd := exec.CommandContext(ctx, self, append([]string{direct.Path}, args...)...)
	cmd.SysProcAttr = direct.SysProcAttr
	cmd.Env = append(env, reaperEnv+"=1") // the reaper unsets it
	// SIGTERM asks the reaper to end the tree; WaitDelay is in case it
	// was stopped or killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// runReaper is the reaper: args are the agent's path and its argv. It
// forwards SIGINT, SIGHUP and SIGQUIT to the agent; SIGTERM (the run
// cancelled) ends the whole tree at once.
func runReaper(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "jukebox: copy reaper: no command")
		return 127
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "jukebox: copy reaper: PR_SET_CHILD_SUBREAPER:", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTERM)
	cmd := &exec.Cmd{Path: args[0], Args: args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "jukebox: %v\n", err)
		return 127
	}
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				keeper.KillChildren()
			} else {
				cmd.Process.Signal(s)
			}
		}
	}()
	code, sig, _ := exitStatus(cmd.Wait())
	if left := keeper.EndTree(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "jukebox: booth: %d process(es) the agent started could not be ended (pid %s): they may still write\n", len(left), strings.Join(left, ", "))
	}
	if sig != 0 {
		raise(syscall.Signal(sig))
	}
	return code
}

// raise ends this process by sig, as the agent was ended, without a core
// dump; it returns if sig did not end it.
func raise(sig syscall.Signal) {
	unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	signal.Reset(sig)
	unix.Kill(os.Getpid(), sig)
	time.Sleep(100 * time.Millisecond) // the signal is delivered before this ends
}
