package nsinit

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// relayer serves one endpoint inside the booth's network namespace,
// forwarding each connection to a unix socket outside it. Unix sockets
// with a path are not bound to a network namespace, so they are the one
// way through; the init reaches the socket through a directory descriptor
// opened before the booth's state is hidden, and nothing in the booth can
// read the init's descriptors (it is not dumpable).
type relayer struct {
	ln     net.Listener
	dir    *os.File
	target string
}

// startRelays brings the loopback interface up and listens on each relay's
// address.
func startRelays(rs []Relay) ([]*relayer, error) {
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("--net none: loopback: %w", err)
	}
	out := make([]*relayer, 0, len(rs))
	for _, r := range rs {
		dir, err := os.OpenFile(filepath.Dir(r.Socket), unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return nil, fmt.Errorf("--net none: relay for %s: %w", r.Addr, err)
		}
		ln, err := net.Listen("tcp", r.Addr)
		if err != nil {
			dir.Close()
			return nil, fmt.Errorf("--net none: relay for %s: %w", r.Addr, err)
		}
		target := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(r.Socket))
		out = append(out, &relayer{ln: ln, dir: dir, target: target})
	}
	return out, nil
}

func (r *relayer) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", r.target)
			if err != nil {
				return
			}
			defer up.Close()
			splice(c, up)
		}()
	}
}

// splice copies both ways until both directions are done, passing each
// half-close on.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
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

// HostRelays listens on a unix socket in dir for each endpoint (an
// address jukebox serves on the host's loopback) and forwards what
// arrives there to it. The returned stop closes them.
func HostRelays(dir string, endpoints []string) ([]Relay, func(), error) {
	var lns []net.Listener
	stop := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if len(endpoints) == 0 {
		return nil, stop, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, stop, err
	}
	// A socket's path is limited to 107 bytes; the directory descriptor
	// keeps a deep workspace from running into that.
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, stop, err
	}
	defer d.Close()
	rs := make([]Relay, 0, len(endpoints))
	for i, ep := range endpoints {
		name := fmt.Sprintf("%d.sock", i)
		sock := filepath.Join(dir, name)
		os.Remove(sock)
		ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
		if err != nil {
			stop()
			return nil, stop, fmt.Errorf("--net none: relay for %s: %w", ep, err)
		}
		lns = append(lns, ln)
		rs = append(rs, Relay{Addr: ep, Socket: sock})
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					up, err := net.Dial("tcp", ep)
					if err != nil {
						return
					}
					defer up.Close()
					splice(c, up)
				}()
			}
		}()
	}
	return rs, stop, nil
}
