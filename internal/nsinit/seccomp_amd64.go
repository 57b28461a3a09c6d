//go:build linux

package nsinit

import "golang.org/x/sys/unix"

// auditArch is the only architecture the seccomp filter lets through;
// x32Bit marks x32 ABI syscall numbers, refused too.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)
