package nsinit

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The host's /tmp is the lower layer of the booth's, and connect() to a
// unix socket reaches its listener through any view of its file, a
// read-only overlay layer included: a socket made in the host's /tmp
// during the run (tmux's next server, a database started later) would be
// as reachable as one made before. So the command's seccomp filter hands
// every connect(2) to a supervisor in the init (a seccomp user
// notification), which makes the connection itself: it takes the
// command's socket (pidfd_getfd), reads the address once, and connects
// that socket with that address, on a thread holding the command's
// capabilities alone, so neither the address nor the socket can change
// between the check and the connection. A path is opened as the command
// would (from its working folder); one that lands in the booth's /tmp
// must be the file at the same place in that /tmp's private upper layer
// (looked up there through no symlink and no mount, and the same inode
// as the overlay shows): the command's own sockets are there, the host's
// never. Any other is refused with ECONNREFUSED.
//
// A datagram sent with sendto(2) to a path needs no connect: unix
// datagram sockets (socket and socketpair) are refused by the filter.

// tmpUpper is an O_PATH descriptor of the booth's /tmp upper layer, and
// tmpUpperDev the device number the overlay gives its files (both set by
// privateTmp).
var (
	tmpUpper    = -1
	tmpUpperDev uint64
)

// liveDirs are the --allow-write-live folders (set by confine). A socket
// there is the host's as much as one in its /tmp (tmux's server under a
// live folder in /tmp drove commands outside the booth): none is
// connected to.
var liveDirs []string

// connectWatch answers the command's connect(2) calls.
type connectWatch struct {
	listener int
	nb       *netBooth // nil unless --net none
	keep     []int     // the command's capabilities
	enc      *json.Encoder
	mu       sync.Mutex // guards enc
}

// superviseConnect answers connect(2) calls from listener until it fails
// (every process of the booth gone), each on a thread of its own.
func superviseConnect(listener int, nb *netBooth, keep []int, events io.Writer) {
	w := &connectWatch{listener: listener, nb: nb, keep: keep, enc: json.NewEncoder(events)}
	for {
		var n seccompNotif
		if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return
		}
		go w.answer(n)
	}
}

// answer connects for n and sends the result. Its thread gives up the
// init's capabilities before it connects (after --net none's verdict,
// which may listen on the command's behalf) and ends with the goroutine,
// never unlocked.
func (w *connectWatch) answer(n seccompNotif) {
	runtime.LockOSThread()
	resp := seccompNotifResp{ID: n.ID, Error: -int32(w.connect(n))}
	ioctlPtr(w.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// connect makes the connection n asks for, returning its errno (0 when
// it succeeded).
func (w *connectWatch) connect(n seccompNotif) unix.Errno {
	pid := int(n.Pid)
	raw, err := readMem(pid, n.Args[1], n.Args[2])
	if err != nil {
		return errnoOf(err, unix.EFAULT)
	}
	sock, err := peerFD(pid, int(n.Args[0]))
	if err != nil {
		return errnoOf(err, unix.EBADF)
	}
	defer unix.Close(sock)
	cwd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/cwd", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return unix.ESRCH
	}
	defer unix.Close(cwd)
	if ioctlPtr(w.listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.ID)) != nil {
		return unix.ESRCH // the caller is gone: its pid may be another's now
	}
	if errno := w.inetVerdict(raw, sock); errno != 0 {
		return errno
	}
	if dropCaps(w.keep) != nil {
		return unix.EPERM
	}
	if path := sunPath(raw); path != "" {
		return connectPath(sock, cwd, path)
	}
	return connectRaw(sock, raw)
}

// inetVerdict applies --net none's rules (netwatch_linux.go) to an IP
// address, reporting a refusal to jukebox.
func (w *connectWatch) inetVerdict(raw []byte, sock int) unix.Errno {
	addr, ok := parseInet(raw)
	if w.nb == nil || !ok {
		return 0
	}
	stream := func() bool {
		typ, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TYPE)
		return err != nil || typ == unix.SOCK_STREAM
	}
	errno, r := w.nb.verdict(addr, stream)
	if r != nil {
		w.mu.Lock()
		w.enc.Encode(r)
		w.mu.Unlock()
	}
	return errno
}

// readMem reads n bytes (a socket address: 2 to 128) at ptr in pid's memory.
func readMem(pid int, ptr, n uint64) ([]byte, error) {
	if n < 2 || n > 128 {
		return nil, unix.EINVAL
	}
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, unix.ESRCH
	}
	defer mem.Close()
	b := make([]byte, n)
	if _, err := mem.ReadAt(b, int64(ptr)); err != nil {
		return nil, unix.EFAULT
	}
	return b, nil
}

// peerFD is a descriptor, in this process, of pid's descriptor fd. The
// notification names the thread that called connect: a thread other than
// its process's first (a Go program connects from any of its threads) is
// no pidfd_open target (without PIDFD_THREAD, of Linux 6.9), so its
// process (Tgid) is taken: the threads share their descriptors.
func peerFD(pid, fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil { // EINVAL or ENOENT, as kernels have it, for a thread
		if tgid := threadGroup(pid); tgid > 0 && tgid != pid {
			pidfd, err = unix.PidfdOpen(tgid, 0)
		}
	}
	if err != nil {
		return -1, unix.ESRCH
	}
	defer unix.Close(pidfd)
	return unix.PidfdGetfd(pidfd, fd, 0)
}

// threadGroup is the process (Tgid) thread tid belongs to, 0 when it
// cannot be read.
func threadGroup(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// sunPath is the path of a unix socket address, "" for an abstract or
// unnamed one, or another family's address.
func sunPath(raw []byte) string {
	if binary.NativeEndian.Uint16(raw[0:2]) != unix.AF_UNIX {
		return ""
	}
	p := raw[2:]
	if len(p) == 0 || p[0] == 0 {
		return ""
	}
	if i := strings.IndexByte(string(p), 0); i >= 0 {
		p = p[:i]
	}
	return string(p)
}

// connectPath connects sock to the socket at path, opened from the
// command's working folder cwd; one in the booth's /tmp only when it is
// in its private upper layer.
func connectPath(sock, cwd int, path string) unix.Errno {
	fd, err := unix.Openat(cwd, path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err, unix.ENOENT)
	}
	defer unix.Close(fd)
	if rel, ok := inBoothTmp(fd); ok && !inTmpUpper(fd, rel) {
		return unix.ECONNREFUSED // not the command's: the host's, or nothing
	}
	if inLiveDir(fd) {
		return unix.ECONNREFUSED
	}
	return connectRaw(sock, sockaddrUnix("/proc/self/fd/"+strconv.Itoa(fd)))
}

// inLiveDir reports whether the file open at fd is in an
// --allow-write-live folder (or its path cannot be told: refused alike).
func inLiveDir(fd int) bool {
	if len(liveDirs) == 0 {
		return false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return true
	}
	for _, d := range liveDirs {
		if Within(p, d) {
			return true
		}
	}
	return false
}

// inBoothTmp reports whether the file open at fd is in the booth's /tmp
// mount itself (not in one mounted below it), and its path there.
func inBoothTmp(fd int) (string, bool) {
	var st, tmp unix.Statx_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &st) != nil ||
		unix.Statx(unix.AT_FDCWD, "/tmp", 0, unix.STATX_MNT_ID, &tmp) != nil {
		return "", true // unknown: look in the upper layer, where nothing of the host's is
	}
	if st.Mnt_id != tmp.Mnt_id {
		return "", false
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	rel, ok := strings.CutPrefix(p, "/tmp/")
	return rel, err == nil && ok && !strings.HasSuffix(p, " (deleted)")
}

// inTmpUpper reports whether the file open at fd, at rel in the booth's
// /tmp, is the one at rel in its upper layer (the command's): the
// overlay gives it the upper layer's device number and its inode number.
// It is opened there beneath the layer, through no symlink and no mount.
func inTmpUpper(fd int, rel string) bool {
	if tmpUpper < 0 || tmpUpperDev == 0 || rel == "" {
		return false
	}
	own, err := unix.Openat2(tmpUpper, rel, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV})
	if err != nil {
		return false
	}
	defer unix.Close(own)
	var seen, up unix.Stat_t
	return unix.Fstat(fd, &seen) == nil && unix.Fstat(own, &up) == nil &&
		seen.Dev == tmpUpperDev && seen.Ino == up.Ino && up.Mode&unix.S_IFMT == unix.S_IFSOCK
}

// sockaddrUnix is the raw socket address of path.
func sockaddrUnix(path string) []byte {
	b := make([]byte, 2, 2+len(path)+1)
	binary.NativeEndian.PutUint16(b, unix.AF_UNIX)
	return append(append(b, path...), 0)
}

// connectRaw connects sock to the raw address, as connect(2) would.
func connectRaw(sock int, raw []byte) unix.Errno {
	_, _, errno := syscall.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&raw[0])), uintptr(len(raw)))
	return errno
}

// errnoOf is err's errno, or def.
func errnoOf(err error, def unix.Errno) unix.Errno {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return def
}
