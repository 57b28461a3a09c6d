package nsinit

import (
	"errors"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The booth's seccomp filter is a deny list written as classic BPF here,
// with no library: it is short, and a library that lets syscalls of a
// foreign architecture through (int 0x80 on x86-64) would make it
// decorative. The filter:
//
//   - refuses every syscall of another architecture or ABI (i386 and x32
//     on x86-64) with ENOSYS;
//   - refuses with EPERM the calls that could undo or see past the
//     confinement: mount, umount2, pivot_root, the new mount API
//     (open_tree, move_mount, fsopen, fsconfig, fsmount, fspick,
//     mount_setattr), setns, kernel modules, kexec, keyrings,
//     open_by_handle_at, swapon/swapoff, reboot and the like;
//   - refuses clone and unshare with CLONE_NEWUSER (a new user namespace
//     would give the command capabilities again), and clone3 with ENOSYS
//     (its flags are behind a pointer the filter cannot read; C libraries
//     fall back to clone);
//   - refuses io_uring with EPERM (its operations, connect and openat
//     among them, would pass this filter and the connect watch unseen;
//     libraries that try it fall back to plain syscalls);
//   - hands connect(2) to a supervisor in the init (unixconnect_linux.go)
//     and refuses unix datagram sockets (socket, socketpair) with EPERM:
//     sendto(2) would reach a host socket by its path without a connect;
//   - refuses vsock sockets with EPERM: they reach the hypervisor's
//     services past the booth's network namespace (--net none);
//   - refuses the terminal ioctls that type into a terminal (TIOCSTI) or
//     paste into a console (TIOCLINUX), so the agent cannot answer
//     jukebox's approval prompt or run commands in the user's shell.
//
// ptrace stays allowed: the PID namespace limits it to the booth's own
// processes, and the init is not dumpable.
var seccompDenied = []uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_SETNS, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	sysOpenTreeAttr,
}

// sysOpenTreeAttr is open_tree_attr (Linux 6.15), numbered alike on every
// architecture the filter is written for.
const sysOpenTreeAttr = 467

// seccompIoctls are the ioctl requests refused with EPERM. The kernel
// reads the request as 32 bits, so the filter compares the low half.
var seccompIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX}

// Offsets in struct seccomp_data.
const (
	seccompNr   = 0
	seccompArch = 4
	seccompArg0 = 16 // low 32 bits on little-endian machines
	seccompArg1 = 24
)

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	ldW       = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeq       = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jge       = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
	jset      = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	ret       = unix.BPF_RET | unix.BPF_K
)

// seccompProgram assembles the filter for this architecture. connect(2)
// is handed to a supervisor (see unixconnect_linux.go).
func seccompProgram() ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, errors.New("no filter is written for this architecture")
	}
	p := []unix.SockFilter{
		bpfStmt(ldW, seccompArch),
		bpfJump(jeq, auditArch, 1, 0),
		bpfStmt(ret, retENOSYS),
		bpfStmt(ldW, seccompNr),
	}
	if x32Bit != 0 {
		p = append(p, bpfJump(jge, x32Bit, 0, 1), bpfStmt(ret, retENOSYS))
	}
	for _, nr := range seccompDenied {
		p = append(p, bpfJump(jeq, uint32(nr), 0, 1), bpfStmt(ret, retEPERM))
	}
	p = append(p, bpfJump(jeq, unix.SYS_CLONE3, 0, 1), bpfStmt(ret, retENOSYS))
	p = append(p, bpfJump(jeq, unix.SYS_CONNECT, 0, 1), bpfStmt(ret, unix.SECCOMP_RET_USER_NOTIF))
	n := len(seccompIoctls)
	p = append(p, bpfJump(jeq, unix.SYS_IOCTL, 0, uint8(2*n+2)), bpfStmt(ldW, seccompArg1))
	for _, req := range seccompIoctls {
		p = append(p, bpfJump(jeq, req, 0, 1), bpfStmt(ret, retEPERM))
	}
	p = append(p, bpfStmt(ret, retAllow))
	for _, nr := range []uintptr{unix.SYS_CLONE, unix.SYS_UNSHARE} {
		p = append(p,
			bpfJump(jeq, uint32(nr), 0, 4),
			bpfStmt(ldW, seccompArg0),
			bpfJump(jset, unix.CLONE_NEWUSER, 0, 1),
			bpfStmt(ret, retEPERM),
			bpfStmt(ret, retAllow),
		)
	}
	for _, nr := range []uintptr{unix.SYS_SOCKET, unix.SYS_SOCKETPAIR} {
		p = append(p,
			bpfJump(jeq, uint32(nr), 0, 9),
			bpfStmt(ldW, seccompArg0),
			bpfJump(jeq, unix.AF_VSOCK, 0, 1),
			bpfStmt(ret, retEPERM),
			bpfJump(jeq, unix.AF_UNIX, 0, 4),
			bpfStmt(ldW, seccompArg1),
			bpfStmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf), // the type without its flags
			bpfJump(jeq, unix.SOCK_DGRAM, 0, 1),
			bpfStmt(ret, retEPERM),
			bpfStmt(ret, retAllow),
		)
	}
	return append(p, bpfStmt(ret, retAllow)), nil
}

// loadSeccomp loads the filter on the calling thread, which has set
// no_new_privs; the processes it starts inherit both. It returns the
// listener descriptor (close-on-exec) the supervisor reads connect(2)
// calls from.
func loadSeccomp() (int, error) {
	prog, err := seccompProgram()
	if err != nil {
		return -1, err
	}
	// Once the supervisor has a connect, a signal no longer interrupts the
	// caller's wait (Linux 5.19): it would restart the call and have the
	// connection made twice. Older kernels refuse the flag.
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		flags, uintptr(unsafe.Pointer(&fprog)))
	if errno == unix.EINVAL {
		fd, _, errno = syscall.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
			unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	}
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
