//go:build !unix

package s3test

import "os"

// stopSig and contSig are nil here: no signal pauses a process.
var stopSig, contSig os.Signal
