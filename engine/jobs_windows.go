package engine

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// jobs puts the agent in a Windows job object that kills every process in
// it when its last handle closes. jukebox holds that handle for as long as
// it lives, so when jukebox ends, however it ends, the agent and what it
// started end with it (Linux's Pdeathsig, for the whole tree). A process
// the agent starts in the instant before it is assigned escapes the job.
// The console delivers Ctrl-C to the agent itself; other signals cannot
// be sent to a process here (terminalSentIt).
type jobs struct{}

// killOnClose is the job every agent joins, made once; 0 when the system
// refused it (the agent then runs without one). Its handle is never
// closed: the kernel closes it when jukebox exits.
var killOnClose = sync.OnceValue(func() windows.Handle {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0
	}
	return job
})

func (*jobs) prepare(*exec.Cmd, io.Reader) {}
func (*jobs) done()                        {}

func (*jobs) started(pid int) {
	job := killOnClose()
	if job == 0 {
		return
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return
	}
	defer windows.CloseHandle(p)
	windows.AssignProcessToJobObject(job, p)
}

func (*jobs) forward(p *os.Process, s os.Signal) {
	if !terminalSentIt(s) {
		p.Signal(s)
	}
}
