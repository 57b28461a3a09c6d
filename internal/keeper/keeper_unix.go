//go:build unix

package keeper

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
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
	if build, ok := os.LookupEnv(BuildEnv); ok {
		os.Unsetenv(BuildEnv)
		if build != Fingerprint() {
			// Before anything starts: jukebox starts itself instead.
			fmt.Fprintln(os.NewFile(4, "reports"), Mismatch)
			os.Exit(MismatchStatus)
		}
	}
	remove := os.Getenv(RemoveEnv)
	os.Unsetenv(RemoveEnv)
	_, wait := os.LookupEnv(WaitEnv)
	os.Unsetenv(WaitEnv)
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	life, rep := bufio.NewReader(os.NewFile(3, "lifeline")), os.NewFile(4, "reports")
	var c Command
	if wait {
		line, err := life.ReadBytes('\n')
		if err != nil || json.Unmarshal(line, &c) != nil {
			os.Exit(0) // jukebox gave the run up before its agent
		}
		remove = c.Remove
	} else if len(os.Args) > 2 {
		c = Command{Path: os.Args[1], Args: os.Args[2:]}
	}
	mode, v, grouped := strings.Cut(v, groupPrefix)
	if !grouped {
		v = mode
	}
	grace, err := time.ParseDuration(v)
	if err != nil || grace <= 0 {
		grace = 10 * time.Second
	}
	t := native()
	if grouped {
		t = &group{}
	}
	parent := os.Getppid()
	code := run(c, life, rep, grace, t)
	if remove != "" && os.Getppid() != parent {
		removeRun(remove) // jukebox died: reparented
	}
	os.Exit(code)
}

// removeRun removes dir, a folder of jukebox's run, after checking it is
// one (IsRunFolder).
func removeRun(dir string) {
	if IsRunFolder(dir) {
		os.RemoveAll(dir)
	}
}

// IsRunFolder says dir is a folder of a jukebox run of this user's: an
// absolute path named RunPrefix..., a folder (not a link) this user owns.
func IsRunFolder(dir string) bool {
	if !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), RunPrefix) {
		return false
	}
	var st syscall.Stat_t
	return syscall.Lstat(dir, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Getuid()
}

// Available reports whether this process can start a keeper (MaybeRun
// ran in it).
func Available() bool { return ready.Load() }

// tree is how a keeper holds the agent's tree: as a child subreaper on
// Linux (reaped), in a process group of the agent's own elsewhere (group).
type tree interface {
	attr() *syscall.SysProcAttr // how the agent is started
	started(pid int)            // the agent runs as pid
	forward(s os.Signal)        // a stop signal reached the keeper
	kill()                      // end the tree now
	end() []string              // end the tree once the agent exited; what is left
}

// run is the keeper of the agent c: life is the lifeline, rep where it
// reports.
func run(c Command, life io.Reader, rep io.Writer, grace time.Duration, t tree) int {
	if c.Path == "" || len(c.Args) == 0 {
		fmt.Fprintln(rep, "failed keeper: no command")
		return 127
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	cmd := &exec.Cmd{Path: c.Path, Args: c.Args, Env: c.Env, Dir: c.Dir, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: t.attr()}
	if err := cmd.Start(); err != nil {
		var errno syscall.Errno
		errors.As(err, &errno)
		fmt.Fprintln(rep, "failed", int(errno), strings.ReplaceAll(err.Error(), "\n", " "))
		return 127
	}
	t.started(cmd.Process.Pid)
	fmt.Fprintln(rep, "started", cmd.Process.Pid)
	go func() { // jukebox closed its end, or died
		io.Copy(io.Discard, life)
		t.kill()
	}()
	followed := make(chan struct{})
	go func() {
		escalate(sigs, grace, rep, t)
		close(followed)
	}()
	cmd.Wait()
	// The terminal's Ctrl-C reached the agent and the keeper at once: the
	// agent may have exited of it before the keeper's own copy was read.
	// Stop delivers what is in flight; every interrupt is reported before
	// the end.
	signal.Stop(sigs)
	close(sigs)
	<-followed
	t.end()
	status := -1
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		status = int(ws)
	}
	fmt.Fprintln(rep, "end", status)
	return 0
}

// escalate follows the stop signals that reach the keeper (the terminal's
// Ctrl-C, or what jukebox forwarded), passing each on where the agent's
// group is not the keeper's: the first gives the agent grace to exit, a
// second or the end of grace kills the tree. Each SIGINT is reported.
func escalate(sigs <-chan os.Signal, grace time.Duration, rep io.Writer, t tree) {
	var timer *time.Timer
	for s := range sigs {
		if s == syscall.SIGINT {
			fmt.Fprintln(rep, "interrupt")
		}
		t.forward(s)
		if timer != nil {
			t.kill()
			continue
		}
		timer = time.AfterFunc(grace, t.kill)
	}
}
