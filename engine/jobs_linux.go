package engine

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// jobs runs the agent (outside the booth) in a process group of its own,
// so that every signal that reaches jukebox came to jukebox and is
// forwarded (a SIGINT from a supervisor or `timeout -s INT` reached
// jukebox alone before, while the terminal's Ctrl-C reached both), and
// the agent cannot signal jukebox's group (kill 0). When jukebox runs in
// the foreground of the terminal that is the agent's stdin, the agent's
// group takes the foreground for the run, as a shell's job would: Ctrl-C
// and Ctrl-Z go to it, and it reads the terminal. When the agent stops
// (Ctrl-Z), jukebox takes the terminal back and stops too, so that the
// shell sees its job stopped; continued in the foreground (fg), it hands
// the terminal back and continues the agent. When the agent exits,
// jukebox takes the terminal back.
type jobs struct {
	tty  *os.File // the terminal handed to the agent, or nil
	pgid int      // the agent's group
}

// prepare sets cmd up before it starts.
func (j *jobs) prepare(cmd *exec.Cmd, stdin io.Reader) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if !takesTerminal(stdin) {
		return
	}
	cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, 0 // the child's stdin
	j.tty = stdin.(*os.File)
}

// startsAhead says whether the agent's keeper may be started ahead of it
// (preKeep), in a group of its own: unless the agent takes the terminal.
func startsAhead(stdin io.Reader) bool { return !takesTerminal(stdin) }

// takesTerminal says whether an agent with stdin takes the terminal for
// its run: stdin is a terminal whose foreground is jukebox's group (not a
// terminal, not ours, or jukebox in the background: no).
func takesTerminal(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}

// started is called once the agent runs.
func (j *jobs) started(pid int) {
	j.pgid = pid
	if j.tty != nil {
		go j.relayStops(pid)
	}
}

// relayStops follows the agent's stops until it has been reaped.
func (j *jobs) relayStops(pid int) {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED, nil); err != nil {
			if err == unix.EINTR {
				continue
			}
			return // reaped (ECHILD)
		}
		if j.foreground() != j.pgid {
			// Stopped in the background (it read the terminal after
			// `bg`): the terminal is the shell's; jukebox stops with it.
			unix.Kill(unix.Getpid(), unix.SIGTSTP)
		} else {
			setForeground(j.tty, unix.Getpgrp())
			// SIGTSTP's default action, which Go leaves alone unless it
			// is asked for (os/signal), stops jukebox here until the
			// shell continues it.
			unix.Kill(unix.Getpid(), unix.SIGTSTP)
			if j.foreground() == unix.Getpgrp() { // fg, not bg
				setForeground(j.tty, j.pgid)
			}
		}
		unix.Kill(-j.pgid, unix.SIGCONT)
	}
}

// foreground is the terminal's foreground group, or -1.
func (j *jobs) foreground() int {
	fg, err := unix.IoctlGetInt(int(j.tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return fg
}

// done is called once the agent has exited: the terminal comes back to
// jukebox, if the agent still had it.
func (j *jobs) done() {
	if j.tty != nil && j.foreground() == j.pgid {
		setForeground(j.tty, unix.Getpgrp())
	}
}

// forward passes s on to the agent's group, as the terminal would.
func (j *jobs) forward(_ *os.Process, s os.Signal) {
	if sig, ok := s.(syscall.Signal); ok && j.pgid > 0 {
		unix.Kill(-j.pgid, sig)
	}
}

// setForeground makes pgid the terminal's foreground group. A process in
// a background group that asks this is stopped (SIGTTOU) unless it
// blocks that signal, so the call runs on a locked thread that blocks it
// for the moment: nothing process-wide changes.
func setForeground(tty *os.File, pgid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var block, old unix.Sigset_t
	block.Val[0] = 1 << (uint(unix.SIGTTOU) - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &block, &old); err != nil {
		return err
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return unix.IoctlSetPointerInt(int(tty.Fd()), unix.TIOCSPGRP, pgid)
}
