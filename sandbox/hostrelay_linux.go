package sandbox

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/jukebox-os/jukebox/internal/nsinit"
	"golang.org/x/sys/unix"
)

// hostNet makes, in dir, the outside of a --net none booth and names it
// in spec: a unix socket for each endpoint (an address jukebox serves on
// the host's loopback) forwarded to it, the booth's resolv.conf (naming
// the booth's resolver, nsinit.DNSAddr), and, when o.Carry is set, the
// socket the booth's plain TCP connections to named hosts arrive on. The
// returned stop closes the sockets.
func hostNet(dir string, o ExecOptions, spec *nsinit.Spec) (func(), error) {
	var lns []net.Listener
	stop := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return stop, err
	}
	spec.Resolv = filepath.Join(dir, "resolv.conf")
	if err := writeResolv(spec.Resolv); err != nil {
		return stop, err
	}
	// A socket's path is limited to 107 bytes; the directory descriptor
	// keeps a deep workspace from running into that.
	d, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return stop, err
	}
	defer d.Close()
	listen := func(name string) (net.Listener, error) {
		os.Remove(filepath.Join(dir, name))
		ln, err := net.Listen("unix", fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name))
		if err == nil {
			lns = append(lns, ln)
		}
		return ln, err
	}
	for i, ep := range o.Endpoints {
		name := fmt.Sprintf("%d.sock", i)
		ln, err := listen(name)
		if err != nil {
			return stop, fmt.Errorf("--net none: relay for %s: %w", ep, err)
		}
		spec.Relays = append(spec.Relays, nsinit.Relay{Addr: ep, Socket: filepath.Join(dir, name)})
		go serveUnix(ln, func(c net.Conn) { forward(c, ep) })
	}
	if o.Carry != nil {
		ln, err := listen("carry.sock")
		if err != nil {
			return stop, fmt.Errorf("--net none: carry socket: %w", err)
		}
		spec.Carry = filepath.Join(dir, "carry.sock")
		go serveUnix(ln, func(c net.Conn) { carry(c, o.Carry) })
	}
	return stop, nil
}

// writeResolv writes the booth's resolv.conf at p: the booth's resolver
// alone.
func writeResolv(p string) error {
	conf := "# jukebox: the booth's resolver (--net none)\nnameserver " + strings.TrimSuffix(nsinit.DNSAddr, ":53") + "\n"
	return os.WriteFile(p, []byte(conf), 0o644)
}

// serveUnix runs handle, in a goroutine, for each connection ln accepts.
func serveUnix(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go handle(c)
	}
}

// forward splices c to the endpoint ep.
func forward(c net.Conn, ep string) {
	defer c.Close()
	up, err := net.Dial("tcp", ep)
	if err != nil {
		return
	}
	defer up.Close()
	splice(c, up)
}

// carry reads the line "HOST PORT" the booth's init sends first, then
// hands the connection to f.
func carry(c net.Conn, f func(CarriedConn)) {
	line, err := readLine(c, 300)
	host, port, ok := strings.Cut(line, " ")
	p, perr := strconv.Atoi(port)
	if err != nil || !ok || perr != nil {
		c.Close()
		return
	}
	f(CarriedConn{Host: host, Port: p, Conn: c})
}

// readLine reads up to a newline, byte by byte (nothing past it is
// taken from c), and at most limit bytes.
func readLine(c io.Reader, limit int) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < limit {
		if _, err := io.ReadFull(c, one); err != nil {
			return "", err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
	return "", fmt.Errorf("line longer than %d bytes", limit)
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
