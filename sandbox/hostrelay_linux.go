package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/jukebox-os/jukebox/internal/nsinit"
	"golang.org/x/sys/unix"
)

// hostRelays listens on a unix socket in dir for each endpoint (an
// address jukebox serves on the host's loopback) and forwards what
// arrives there to it. The returned stop closes them.
func hostRelays(dir string, endpoints []string) ([]nsinit.Relay, func(), error) {
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
	rs := make([]nsinit.Relay, 0, len(endpoints))
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
		rs = append(rs, nsinit.Relay{Addr: ep, Socket: sock})
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
