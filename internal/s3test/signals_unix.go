//go:build unix

package s3test

import (
	"os"
	"syscall"
)

// stopSig and contSig pause and resume the gateway.
var stopSig, contSig os.Signal = syscall.SIGSTOP, syscall.SIGCONT
