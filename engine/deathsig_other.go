//go:build !linux

package engine

import "os/exec"

// dieWithUs does nothing here: only Linux has a parent-death signal.
func dieWithUs(*exec.Cmd) {}
