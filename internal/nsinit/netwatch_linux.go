package nsinit

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Under --net none, the supervisor of the command's connect(2) calls
// (unixconnect_linux.go) also judges IP addresses: a connection over
// loopback (the booth's own, where jukebox's endpoints are relayed and
// where the agent may run servers of its own) is made as the kernel
// would have made it; any other is refused with the error the empty
// network namespace would have given (ENETUNREACH) and reported to
// jukebox, which writes it on the tape. The supervisor connects with the
// address it read, so the caller cannot change it after the check.
//
// Datagrams sent with sendto(2) and no connect are refused by the kernel
// but not reported.

// seccompNotif and seccompNotifResp are struct seccomp_notif and
// seccomp_notif_resp (linux/seccomp.h).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := syscall.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// parseInet reads an AF_INET or AF_INET6 socket address; ok is false
// for any other family.
func parseInet(b []byte) (netip.AddrPort, bool) {
	n := len(b)
	port := func() uint16 { return binary.BigEndian.Uint16(b[2:4]) }
	switch binary.NativeEndian.Uint16(b[0:2]) {
	case unix.AF_INET:
		if n < 8 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port()), true
	case unix.AF_INET6:
		if n < 24 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port()), true
	}
	return netip.AddrPort{}, false
}
