//go:build !linux

package sandbox

import (
	"context"
	"os/exec"
)

// maybeRunReaper: the copy run's reaper is Linux's (copyreap_linux.go).
func maybeRunReaper() {}

// copyCommand is the command that runs args for a copy run.
func copyCommand(ctx context.Context, args, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = env
	return cmd
}
