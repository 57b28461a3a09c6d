package nsinit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Under --net none, the command's seccomp filter hands every connect(2)
// to a supervisor in the init (a seccomp user notification). The supervisor
// reads the address from the caller's memory: a connection over loopback
// (the booth's own, where jukebox's endpoints are relayed and where the
// agent may run servers of its own), or one that is not over IP, proceeds
// as the kernel would have it; any other is refused with the error the
// empty network namespace would have given (ENETUNREACH) and reported to
// jukebox, which writes it on the tape. The
// address is read once and never trusted for more than that decision: if
// the caller changes it before the kernel reads it again, the connection
// happens inside the empty namespace, where it fails all the same.
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

// superviseConnect answers connect(2) calls from listener until it fails
// (every process of the booth gone), as nb.verdict decides, writing each
// refusal as a JSON line to events.
func superviseConnect(listener int, nb *netBooth, events io.Writer) {
	enc := json.NewEncoder(events)
	for {
		var n seccompNotif
		if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return
		}
		resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
		addr, ok := readSockaddr(int(n.Pid), n.Args[1], n.Args[2])
		if ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.ID)) != nil {
			continue // the caller is gone
		}
		if ok {
			stream := func() bool { return streamSocket(int(n.Pid), int(n.Args[0])) }
			if errno, r := nb.verdict(addr, stream); errno != 0 {
				resp.Flags, resp.Error = 0, -int32(errno)
				enc.Encode(r)
			}
		}
		ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

// streamSocket reports whether descriptor fd of process pid is a stream
// socket (TCP), which the booth can carry; a datagram socket (UDP, QUIC)
// cannot be. A socket it cannot look at (a thread other than the
// process's first asked, on a kernel before 6.9) counts as a stream.
func streamSocket(pid, fd int) bool {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true
	}
	defer unix.Close(pidfd)
	own, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return true
	}
	defer unix.Close(own)
	typ, err := unix.GetsockoptInt(own, unix.SOL_SOCKET, unix.SO_TYPE)
	return err != nil || typ == unix.SOCK_STREAM
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := syscall.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// readSockaddr reads an AF_INET or AF_INET6 socket address of length n
// at ptr in pid's memory; ok is false for any other family.
func readSockaddr(pid int, ptr, n uint64) (netip.AddrPort, bool) {
	if n < 2 || n > 128 {
		return netip.AddrPort{}, false
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return netip.AddrPort{}, false
	}
	defer mem.Close()
	b := make([]byte, n)
	if _, err := mem.ReadAt(b, int64(ptr)); err != nil {
		return netip.AddrPort{}, false
	}
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
