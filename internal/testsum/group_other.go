//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// ownGroup leaves cmd as it is: its cancellation kills the process alone.
func ownGroup(*exec.Cmd) {}

// stopSignals are the signals that stop the jobs.
var stopSignals = []os.Signal{os.Interrupt}

// execTest runs the test binary args[0] and exits with its status.
func execTest(args []string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		os.Exit(ee.ExitCode())
	}
	if err == nil {
		os.Exit(0)
	}
	return err
}
