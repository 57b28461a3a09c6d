package engine

import (
	"os/exec"
	"syscall"
)

// dieWithUs asks the kernel to kill the agent if jukebox dies (kill -9
// included), so no agent outlives its recorder. Only the agent itself:
// processes it starts are its own to end (in the booth, the PID
// namespace ends them all).
func dieWithUs(c *exec.Cmd) {
	if c.SysProcAttr == nil {
		c.SysProcAttr = &syscall.SysProcAttr{}
	}
	c.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
