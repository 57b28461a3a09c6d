package keeper

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ready is set once MaybeRun ran in this process: only then does starting
// this executable again run the keeper.
var ready atomic.Bool

// MaybeRun runs the keeper when this process was started as one (Env),
// and then never returns; in any other process it returns at once. Call
// it first thing in main, and in TestMain of test binaries that run
// agents.
func MaybeRun() {
	ready.Store(true)
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	os.Unsetenv(Env)
	grace, err := time.ParseDuration(v)
	if err != nil || grace <= 0 {
		grace = 10 * time.Second
	}
	os.Exit(run(os.Args[1:], grace))
}

// Available reports whether this process can start a keeper (MaybeRun
// ran in it).
func Available() bool { return ready.Load() }

// run is the keeper: args are the agent's path and its argv.
func run(args []string, grace time.Duration) int {
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	life, rep := os.NewFile(3, "lifeline"), os.NewFile(4, "reports")
	if len(args) < 2 {
		fmt.Fprintln(rep, "failed keeper: no command")
		return 127
	}
	// Orphans of the agent's tree come to the keeper, not to init.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := &exec.Cmd{Path: args[0], Args: args[1:], Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}}
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Fprintln(rep, "failed", int(errno), strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	fmt.Fprintln(rep, "started", cmd.Process.Pid)
	go func() { // jukebox closed its end, or died
		io.Copy(io.Discard, life)
		KillChildren()
	}()
	go escalate(sigs, grace, rep)
	cmd.Wait()
	EndTree()
	status := -1
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		status = int(ws)
	}
	fmt.Fprintln(rep, "end", status)
	return 0
}

// escalate follows the stop signals that reach the agent's group (the
// terminal's Ctrl-C, or what jukebox forwarded): the first gives the agent
// grace to exit, a second or the end of grace kills the tree. Each SIGINT
// is reported.
func escalate(sigs <-chan os.Signal, grace time.Duration, rep io.Writer) {
	var timer *time.Timer
	for s := range sigs {
		if s == syscall.SIGINT {
			fmt.Fprintln(rep, "interrupt")
		}
		if timer != nil {
			KillChildren()
			continue
		}
		timer = time.AfterFunc(grace, func() { KillChildren() })
	}
}
