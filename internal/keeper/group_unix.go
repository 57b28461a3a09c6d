//go:build unix

package keeper

import (
	"errors"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// groupPrefix in Env's value asks for the group keeper where the system
// has a better one (Linux): the tests run macOS's keeper this way.
const groupPrefix = "group,"

// group keeps the agent's tree as the process group the agent leads: what
// macOS and the BSDs offer, which have no child subreaper. Everything the
// agent starts stays in the group unless it makes a group or session of
// its own (a double-forked daemon does): that escapes, and docs/platforms.md
// says so. The keeper stays in jukebox's group and passes every stop
// signal that reaches it on to the agent's group. When the keeper's stdin
// is the terminal and its group the terminal's foreground, the agent's
// group takes the foreground (it reads the terminal, the terminal's
// Ctrl-C goes to it) and gives it back when the agent has exited.
type group struct {
	pgid atomic.Int32
	tty  bool // the agent's group took the terminal's foreground
	home int  // the foreground group before
}

func (g *group) attr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if fg, err := foreground(0); err == nil && fg == syscall.Getpgrp() {
		a.Foreground, a.Ctty = true, 0
		g.tty, g.home = true, fg
		// Giving the foreground back from what is then a background
		// group would stop the keeper (SIGTTOU).
		signal.Ignore(syscall.SIGTTOU)
	}
	return a
}

func (g *group) started(pid int) { g.pgid.Store(int32(pid)) }

func (g *group) forward(s os.Signal) {
	if pgid := g.pgid.Load(); pgid > 0 {
		syscall.Kill(-int(pgid), s.(syscall.Signal))
	}
}

func (g *group) kill() {
	if pgid := g.pgid.Load(); pgid > 0 {
		syscall.Kill(-int(pgid), syscall.SIGKILL)
	}
}

// end kills the group until none of it is left, or for 100 ms: a
// process killed becomes a zombie of init, which takes its time to reap
// it, and a group of zombies still takes signals. Each kill reaches every
// member at once; the repeats catch what forked meanwhile. It returns the
// group's id when some of it was still there at the end.
func (g *group) end() []string {
	pgid := int(g.pgid.Load())
	if pgid <= 0 {
		return nil
	}
	if g.tty {
		setForeground(0, g.home)
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for {
		err := syscall.Kill(-pgid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if err != nil || time.Now().After(deadline) {
			return []string{"group " + strconv.Itoa(pgid)}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
