package nsinit

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// relayer serves one endpoint inside the booth's network namespace,
// forwarding each connection to a unix socket outside it. Unix sockets
// with a path are not bound to a network namespace, so they are the one
// way through; the init reaches the socket through a directory descriptor
// opened before the booth's state is hidden, and nothing in the booth can
// read the init's descriptors (it is not dumpable).
//
// It works on bare descriptors, without package net, which would link the
// C resolver into jukebox-booth and make every start of it slower.
type relayer struct {
	listener int
	target   string // the socket, through the directory descriptor
	header   []byte // written to the socket before the connection's bytes
}

// startRelays listens on each relay's address, in the booth's network
// namespace with its loopback up.
func startRelays(rs []Relay) ([]*relayer, error) {
	out := make([]*relayer, 0, len(rs))
	for _, r := range rs {
		target, err := socketTarget(r.Socket)
		if err != nil {
			return nil, fmt.Errorf("--net none: relay for %s: %w", r.Addr, err)
		}
		ln, err := listenTCP(r.Addr)
		if err != nil {
			return nil, fmt.Errorf("--net none: relay for %s: %w", r.Addr, err)
		}
		out = append(out, &relayer{listener: ln, target: target})
	}
	return out, nil
}

// socketTarget is the path of the unix socket sock through a descriptor
// of its folder, opened now, while the booth's state is still visible.
func socketTarget(sock string) (string, error) {
	dir, err := unix.Open(filepath.Dir(sock), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	return "/proc/self/fd/" + strconv.Itoa(dir) + "/" + filepath.Base(sock), nil
}

// listenTCP listens on addr, an IP address and port.
func listenTCP(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, err
	}
	family, sa := unix.AF_INET6, unix.Sockaddr(&unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()})
	if ap.Addr().Is4() {
		family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (r *relayer) serve() {
	for {
		c, _, err := unix.Accept4(r.listener, unix.SOCK_CLOEXEC)
		switch {
		case errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED):
			continue
		case err != nil:
			return
		}
		go r.relay(c)
	}
}

// relay connects c to the target and copies both ways until both
// directions are done, passing each half-close on.
func (r *relayer) relay(c int) {
	defer unix.Close(c)
	up, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(up)
	if err := unix.Connect(up, &unix.SockaddrUnix{Name: r.target}); err != nil {
		return
	}
	if len(r.header) > 0 && !writeAll(up, r.header) {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pump(up, c)
	}()
	pump(c, up)
	wg.Wait()
}

// pump copies src to dst until src ends or either fails, then shuts
// dst's writing half.
func pump(dst, src int) {
	defer unix.Shutdown(dst, unix.SHUT_WR)
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Read(src, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n <= 0 {
			return
		}
		if !writeAll(dst, buf[:n]) {
			return
		}
	}
}

// writeAll writes b whole to fd; false when it failed.
func writeAll(fd int, b []byte) bool {
	for len(b) > 0 {
		m, err := unix.Write(fd, b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false
		}
		b = b[m:]
	}
	return true
}

// loopbackUp sets IFF_UP on lo; a new network namespace starts with it
// down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
