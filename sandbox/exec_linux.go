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

// runInitChild starts the init in new user and mount namespaces and waits.
func runInitChild(ctx context.Context, spec initSpec, o ExecOptions) (int, error) {
	raw, _ := json.Marshal(spec)
	cmd := exec.CommandContext(ctx, "/proc/self/exe")
	cmd.Args = []string{"jukebox-booth-init"}
	cmd.Env = append(envOrSelf(o.Env), initEnv+"="+string(raw))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	uid, gid := os.Getuid(), os.Getgid()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
	}
	r, w, err := os.Pipe()
	if err != nil {
		return -1, err
	}
	defer r.Close()
	cmd.ExtraFiles = []*os.File{w}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return -1, fmt.Errorf("%w: %v", errNoUserNS, err)
	}
	report, _ := io.ReadAll(r) // EOF when the command is exec'd or init exits
	err = cmd.Wait()
	if msg := string(report); strings.HasPrefix(msg, "setup: ") {
		return -1, fmt.Errorf("%w: %s", errSetup, strings.TrimPrefix(msg, "setup: "))
	} else if msg != "" {
		return -1, fmt.Errorf("sandbox: exec %s: %s", o.Args[0], strings.TrimPrefix(msg, "exec: "))
	}
	return exitCode(err)
}
