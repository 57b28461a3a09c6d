package keeper

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// native is Linux's keeper: a child subreaper in the agent's group (the
// group jukebox made for the keeper), to which every orphan of the
// agent's tree comes, a double-forked daemon that left its session
// included.
func native() tree { return reaped{} }

type reaped struct{}

func (reaped) attr() *syscall.SysProcAttr {
	// Orphans of the agent's tree come to the keeper, not to init.
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
func (reaped) started(int)       {}
func (reaped) forward(os.Signal) {} // the agent shares the keeper's group: it had the signal too
func (reaped) kill()             { KillChildren() }
func (reaped) end() []string     { return EndTree() }

// EndTree kills and reaps every process left under this process, those
// reparented to it while it does included (it must be a child subreaper
// for orphans to come to it), for up to 10 seconds; it returns the pids
// still there then (ones it may not signal, say).
func EndTree() []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
		// No child at all, live or not (the usual end: the agent left
		// nothing running): nothing to kill, and no /proc to read. An
		// orphan of the agent's tree is this process's child before the
		// agent's end is reported, so none can come later.
		if _, err := unix.Wait4(-1, nil, unix.WNOHANG, nil); errors.Is(err, unix.ECHILD) {
			return nil
		}
		left := KillChildren()
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			return nil
		case err != nil && !errors.Is(err, unix.EINTR):
			return left
		case pid > 0:
			continue
		case time.Now().After(deadline):
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// KillChildren sends SIGKILL to every child of this process and returns
// their pids.
func KillChildren() []string {
	pids, ok := children()
	if !ok {
		pids = nil
		ents, _ := os.ReadDir("/proc")
		self := os.Getpid()
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil && parentOf(pid) == self {
				pids = append(pids, e.Name())
			}
		}
	}
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		unix.Kill(pid, unix.SIGKILL)
	}
	return pids
}

// children lists this process's children from each of its threads'
// /proc/self/task/TID/children (a child belongs to the thread that forked
// it, or was reparented to): a few small reads, where walking /proc reads
// every process's stat. ok is false where the kernel has no such file.
func children() (pids []string, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended meanwhile
			}
			return nil, false
		}
		pids = append(pids, strings.Fields(string(b))...)
	}
	if len(tasks) > 0 {
		if _, err := os.Stat("/proc/self/task/" + tasks[0].Name() + "/children"); errors.Is(err, os.ErrNotExist) {
			return nil, false // no CONFIG_PROC_CHILDREN
		}
	}
	return pids, true
}

// parentOf reads pid's parent from /proc, 0 if it cannot.
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
