package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// runInitChild starts the init in new user, mount and PID
// namespaces (and a network namespace for NetNone) and waits. Killing it
// (ctx, or jukebox dying: Pdeathsig) ends the whole PID namespace.
//
// The init leads a session of its own (Setsid): a process group outlives
// a PID namespace's borders, so an agent in jukebox's group could signal
// jukebox and the user's shell job (kill 0) and, on the terminal jukebox
// controls, take the foreground. Without a controlling terminal the agent
// still reads and writes the terminal through its standard streams, but
// Ctrl-C and Ctrl-\ reach jukebox only, which stops the booth.
//
// started, if set, is called once the command has been executed, before
// it ends: the booth stands.
func runInitChild(ctx context.Context, spec initSpec, o ExecOptions, started func()) (ExecResult, error) {
	spec.UID, spec.GID = os.Getuid(), os.Getgid()
	raw, _ := json.Marshal(spec)
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{"jukebox-booth-init"}
	cmd.Env = append(envOrSelf(o.Env), initEnv+"="+string(raw))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	flags := syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	if spec.NetNone {
		flags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  uintptr(flags),
		UidMappings: ownMap(spec.UID),
		GidMappings: ownMap(spec.GID),
		Pdeathsig:   syscall.SIGKILL,
		Setsid:      true,
	}
	if spec.UID != 0 {
		cmd.SysProcAttr.AmbientCaps = allCaps()
	}
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
	msg, _ := io.ReadAll(report) // EOF when the command is exec'd or the init exits
	if len(msg) == 0 && started != nil {
		started()
	}
	err = cmd.Wait()
	st, _ := io.ReadAll(status)
	switch m := string(msg); {
	case strings.HasPrefix(m, "setup: "):
		return ExecResult{ExitCode: -1}, fmt.Errorf("%w: %s", errSetup, strings.TrimPrefix(m, "setup: "))
	case m != "":
		return ExecResult{ExitCode: -1}, fmt.Errorf("sandbox: exec %s: %s", o.Args[0], strings.TrimPrefix(m, "exec: "))
	}
	code, err := exitCode(err)
	res := ExecResult{ExitCode: code}
	var sig int
	if _, e := fmt.Sscanf(string(st), "signal %d", &sig); e == nil {
		res.Signal = sig
	}
	return res, err
}
