//go:build linux && !amd64 && !arm64

package nsinit

// No filter is written for this architecture yet: the booth's setup
// fails there and Exec falls back to the copy, which says it does not
// confine.
const (
	auditArch = 0
	x32Bit    = 0
)
