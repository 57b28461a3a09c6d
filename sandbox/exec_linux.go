package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/jukebox-os/jukebox/internal/nsinit"
)

// runInitChild starts the namespace init for spec (nsinit.Attr: Killing
// it, through ctx or jukebox dying, ends the whole PID namespace) and
// waits. An init built from other source (an older jukebox-booth) does
// nothing but say so; this executable is then started instead.
//
// Its standard streams are o's, files other than pipes, sockets and
// terminals behind pipes jukebox pumps (pumpStreams).
//
// started, if set, is called once the command has been executed, before
// it ends, with the init's pid: the booth stands.
func runInitChild(ctx context.Context, spec nsinit.Spec, o ExecOptions, started func(init int)) (ExecResult, error) {
	spec.UID, spec.GID = os.Getuid(), os.Getgid()
	spec.TmpShared = nsinit.SharedTmp("/tmp", spec.UID, spec.GID)
	pumpStreams(&o)
	spec.Build = nsinit.Fingerprint()
	path := nsinit.Path()
	res, err := startInit(ctx, path, spec, o, started)
	if errors.Is(err, errMismatch) {
		nsinit.Distrust()
		res, err = startInit(ctx, nsinit.Path(), spec, o, started)
	}
	return res, err
}

// errMismatch: the init was built from other source (nsinit.Mismatch).
var errMismatch = errors.New("sandbox: the booth's init was built from other source")

func startInit(ctx context.Context, path string, spec nsinit.Spec, o ExecOptions, started func(init int)) (ExecResult, error) {
	raw, _ := json.Marshal(spec)
	cmd := exec.CommandContext(ctx, path)
	cmd.Args = []string{"jukebox-booth-init"} // this executable again
	if path != nsinit.Self {
		cmd.Args = []string{nsinit.Helper}
	}
	cmd.Env = append(envOrSelf(o.Env), nsinit.Env+"="+string(raw))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.SysProcAttr = nsinit.Attr(spec)
	report, reportW, err := os.Pipe()
	if err != nil {
		return ExecResult{ExitCode: -1}, err
	}
	defer report.Close()
	status, statusW, err := os.Pipe()
	if err != nil {
		reportW.Close()
		return ExecResult{ExitCode: -1}, err
	}
	defer status.Close()
	events, eventsW, err := os.Pipe()
	if err != nil {
		reportW.Close()
		statusW.Close()
		return ExecResult{ExitCode: -1}, err
	}
	cmd.ExtraFiles = []*os.File{reportW, statusW, eventsW}
	heard := make(chan struct{})
	go func() {
		defer close(heard)
		defer events.Close()
		dec := json.NewDecoder(events)
		for {
			var r NetRefusal
			if dec.Decode(&r) != nil {
				return
			}
			if o.OnNetRefused != nil {
				o.OnNetRefused(r)
			}
		}
	}()
	defer func() { <-heard }()
	err = cmd.Start()
	reportW.Close()
	statusW.Close()
	eventsW.Close()
	if err != nil {
		return ExecResult{ExitCode: -1}, fmt.Errorf("%w: %v", errNoUserNS, err)
	}
	stop := forwardSignals(cmd.Process, o.Signals, nil)
	msg, _ := io.ReadAll(report) // EOF when the command is exec'd or the init exits
	if len(msg) == 0 && started != nil {
		started(cmd.Process.Pid) // not waited for yet: the pid is still the init's
	}
	err = cmd.Wait()
	stop()
	st, _ := io.ReadAll(status)
	switch m := string(msg); {
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == nsinit.Mismatch && path != nsinit.Self:
		return ExecResult{ExitCode: -1}, fmt.Errorf("%w: %s", errMismatch, m)
	case strings.HasPrefix(m, "setup: "):
		return ExecResult{ExitCode: -1}, fmt.Errorf("%w: %s", errSetup, strings.TrimPrefix(m, "setup: "))
	case m != "":
		return ExecResult{ExitCode: -1}, notStarted(spec, m)
	}
	code, err := exitCode(err)
	res := ExecResult{ExitCode: code}
	var sig int
	if _, e := fmt.Sscanf(string(st), "signal %d", &sig); e == nil {
		res.Signal = sig
	}
	return res, err
}
