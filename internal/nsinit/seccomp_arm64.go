//go:build linux

package nsinit

import "golang.org/x/sys/unix"

// auditArch is the only architecture the seccomp filter lets through.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)
