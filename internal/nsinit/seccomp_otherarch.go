//go:build linux && !amd64 && !arm64

package nsinit

// No filter is written for this architecture yet: the booth's setup
// fails there, so --booth refuses to start the agent (--booth-mode copy
// runs it unconfined, and says so).
const (
	auditArch = 0
	x32Bit    = 0
)
