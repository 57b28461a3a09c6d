package keeper

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// EndTree kills and reaps every process left under this process, those
// reparented to it while it does included (it must be a child subreaper
// for orphans to come to it), for up to 10 seconds; it returns the pids
// still there then (ones it may not signal, say).
func EndTree() []string {
	deadline := time.Now().Add(10 * time.Second)
	for {
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
	var pids []string
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || parentOf(pid) != self {
			continue
		}
		unix.Kill(pid, unix.SIGKILL)
		pids = append(pids, e.Name())
	}
	return pids
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
