package nsinit

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// netBooth is the init's side of --net none: the relays to jukebox's
// endpoints, the booth's resolver (dns.go), and the listeners that carry
// the agent's plain TCP connections to named hosts out to jukebox.
type netBooth struct {
	relays []*relayer
	dns    int // the resolver's UDP socket at DNSAddr
	names  *names
	carry  string // the carry socket, through its folder's descriptor; "" refuses
	// carried are the listeners made so far, by the address the agent
	// connects to; the supervisor alone touches it.
	carried map[netip.AddrPort]bool
}

// startNet brings the booth's loopback up with NamedPrefix routed to it
// (so the named addresses are the booth's own, where the init listens for
// what it carries), binds the resolver and the relays, and opens the
// carry socket's folder, all before the booth's state is hidden.
func startNet(s Spec) (*netBooth, error) {
	if err := loopbackUp(); err != nil {
		return nil, fmt.Errorf("--net none: loopback: %w", err)
	}
	if err := routeNamed(); err != nil {
		return nil, fmt.Errorf("--net none: route %s to the loopback: %w", NamedPrefix, err)
	}
	nb := &netBooth{names: newNames(), carried: map[netip.AddrPort]bool{}, dns: -1}
	var err error
	if nb.relays, err = startRelays(s.Relays); err != nil {
		return nil, err
	}
	if nb.dns, err = listenUDP(DNSAddr); err != nil {
		return nil, fmt.Errorf("--net none: the booth's resolver at %s: %w", DNSAddr, err)
	}
	if s.Carry != "" {
		if nb.carry, err = socketTarget(s.Carry); err != nil {
			return nil, fmt.Errorf("--net none: carry socket: %w", err)
		}
	}
	return nb, nil
}

// serve serves the relays and the resolver, each in a goroutine.
func (nb *netBooth) serve() {
	for _, r := range nb.relays {
		go r.serve()
	}
	go nb.serveDNS()
}

// routeNamed gives the loopback an address in NamedPrefix, with the
// prefix's length: on a loopback device the kernel then routes the whole
// prefix locally, as it does 127.0.0.0/8.
func routeNamed() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo:jukebox")
	if err != nil {
		return err
	}
	a := NamedPrefix.Addr().Next().As4()
	if err := ifr.SetInet4Addr(a[:]); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, ifr); err != nil {
		return err
	}
	mask := netip.AddrFrom4([4]byte{0xff, 0xfe, 0, 0}).As4() // the /15 of NamedPrefix
	if err := ifr.SetInet4Addr(mask[:]); err != nil {
		return err
	}
	return unix.IoctlIfreq(fd, unix.SIOCSIFNETMASK, ifr)
}

// listenUDP binds a datagram socket at addr, an IPv4 address and port.
func listenUDP(addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// serveDNS answers the queries that reach the booth's resolver until its
// socket fails.
func (nb *netBooth) serveDNS() {
	buf := make([]byte, 4096)
	for {
		n, from, err := unix.Recvfrom(nb.dns, buf, 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return
		}
		if resp := nb.names.answer(buf[:n]); resp != nil {
			unix.Sendto(nb.dns, resp, 0, from)
		}
	}
}

// maxCarried bounds the listeners the init makes for carried
// connections (one per named address and port).
const maxCarried = 4096

// verdict decides a connect(2) to addr (stream says, when asked, whether
// from a stream socket):
// errno 0 lets it proceed; r, when set, is the refusal to report.
// Loopback (the booth's own, where jukebox's endpoints are relayed)
// proceeds; a stream to a named address on a port other than 80 and 443
// is carried out to jukebox, unless the booth carries nothing
// (--hermetic); a datagram to a named address cannot be carried and is
// refused; a named address on those two ports is refused
// (HTTP goes through jukebox's proxy: a client that ignores the proxy
// variables, pins a certificate or keeps a trust store of its own fails
// here, by name, rather than getting out); anything else is refused as
// the empty namespace would (ENETUNREACH).
func (nb *netBooth) verdict(addr netip.AddrPort, stream func() bool) (unix.Errno, *Refusal) {
	ip := addr.Addr().Unmap()
	if ip.IsLoopback() || ip.IsUnspecified() { // 0.0.0.0 and :: connect to loopback
		return 0, nil
	}
	family := "ipv4"
	if addr.Addr().Is6() && !addr.Addr().Is4In6() {
		family = "ipv6"
	}
	r := &Refusal{Family: family, Addr: addr.String(), Errno: unix.ErrnoName(unix.ENETUNREACH)}
	host, named := nb.names.name(ip)
	if !named {
		return unix.ENETUNREACH, r
	}
	r.Host, r.Errno, r.UDP = host, unix.ErrnoName(unix.ECONNREFUSED), !stream()
	switch port := addr.Port(); {
	case port == 80 || port == 443 || r.UDP:
	case nb.carry == "":
		r.Hermetic = true
	case nb.carryTo(netip.AddrPortFrom(ip, port), host) == nil:
		return 0, nil
	}
	return unix.ECONNREFUSED, r
}

// carryTo makes sure a listener at ap carries what reaches it to jukebox,
// announced as host and ap's port.
func (nb *netBooth) carryTo(ap netip.AddrPort, host string) error {
	if nb.carried[ap] {
		return nil
	}
	if len(nb.carried) >= maxCarried {
		return unix.EMFILE
	}
	ln, err := listenTCP(ap.String())
	if err != nil {
		return err
	}
	nb.carried[ap] = true
	r := &relayer{listener: ln, target: nb.carry, header: []byte(host + " " + strconv.Itoa(int(ap.Port())) + "\n")}
	go r.serve()
	return nil
}
