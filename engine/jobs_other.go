//go:build !linux && !windows

package engine

import (
	"io"
	"os"
	"os/exec"
)

// jobs leaves the agent in jukebox's process group here, where the
// terminal delivers Ctrl-C and Ctrl-\ to both: those are not forwarded
// again (terminalSentIt), every other signal is.
type jobs struct{}

func (*jobs) prepare(*exec.Cmd, io.Reader) {}
func (*jobs) started(int)                  {}
func (*jobs) done()                        {}

func (*jobs) forward(p *os.Process, s os.Signal) {
	if !terminalSentIt(s) {
		p.Signal(s)
	}
}

// startsAhead is false: the agent stays in jukebox's group here, which a
// keeper started ahead in a group of its own would change.
func startsAhead(io.Reader) bool { return false }
