package nsinit

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"sync"
)

// Under --net none the booth's resolver is a small DNS responder the init
// serves at DNSAddr inside the namespace (the booth's /etc/resolv.conf
// names it; /etc/hosts is the host's, as is). It answers every A query
// with an address of its own from NamedPrefix, one per name, stable for
// the run, and every other query with no record, so that a later
// connection to such an address names the host the agent asked for:
// refused, it is reported with the name; carried (plain TCP), it is
// dialled by name outside. Names ending in "localhost" are loopback
// (RFC 6761). Nothing here asks a real DNS server: the agent learns no
// real address, and no query leaves the booth.

// DNSAddr is the booth's resolver under --net none, inside the namespace.
const DNSAddr = "127.0.0.53:53"

// NamedPrefix is the range the booth's resolver hands names addresses
// from: 198.18.0.0/15, reserved for benchmarking (RFC 2544), routed to
// nothing on the host.
var NamedPrefix = netip.MustParsePrefix("198.18.0.0/15")

// names is the booth's table of names and the addresses it gave them:
// from 198.18.0.2 on (198.18.0.1 is the loopback's own in the range).
type names struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   netip.Addr
}

func newNames() *names {
	return &names{byName: map[string]netip.Addr{}, byAddr: map[netip.Addr]string{}, next: NamedPrefix.Addr().Next().Next()}
}

// addr is name's address, given it on first use; ok is false once the
// range is spent.
func (n *names) addr(name string) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a, true
	}
	a := n.next
	if !NamedPrefix.Contains(a) || !NamedPrefix.Contains(a.Next()) { // the last is the broadcast
		return netip.Addr{}, false
	}
	n.next = a.Next()
	n.byName[name], n.byAddr[a] = a, name
	return a, true
}

// name is the name a was given, if any.
func (n *names) name(a netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.byAddr[a.Unmap()]
	return name, ok
}

// DNS header flags and codes (RFC 1035 4.1.1).
const (
	dnsHeaderLen  = 12
	dnsQR         = 1 << 15
	dnsAA         = 1 << 10
	dnsRD         = 1 << 8
	dnsRA         = 1 << 7
	dnsOpMask     = 0xf << 11
	rcodeFormErr  = 1
	rcodeServFail = 2
	rcodeNXDomain = 3
	rcodeNotImp   = 4
	typeA         = 1
	classIN       = 1
	dnsTTL        = 3600 // the address holds for the whole run
)

// answer is the response to the DNS query q, or nil for what is not a
// query at all (dropped, as a server does).
func (n *names) answer(q []byte) []byte {
	if len(q) < dnsHeaderLen || binary.BigEndian.Uint16(q[2:])&dnsQR != 0 {
		return nil
	}
	flags := binary.BigEndian.Uint16(q[2:])
	name, qtype, qclass, end, ok := parseQuestion(q)
	resp := make([]byte, dnsHeaderLen, 64)
	copy(resp, q[:2])
	rflags := uint16(dnsQR|dnsAA|dnsRA) | flags&(dnsOpMask|dnsRD)
	switch {
	case flags&dnsOpMask != 0:
		return setHeader(resp, rflags|rcodeNotImp, 0, 0)
	case !ok || binary.BigEndian.Uint16(q[4:]) != 1:
		return setHeader(resp, rflags|rcodeFormErr, 0, 0)
	}
	resp = append(resp, q[dnsHeaderLen:end]...)
	if qtype != typeA || qclass != classIN {
		return setHeader(resp, rflags, 1, 0) // no record of that type
	}
	a, ok := netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	switch {
	case !hostName(name):
		return setHeader(resp, rflags|rcodeNXDomain, 1, 0)
	case name != "localhost" && !strings.HasSuffix(name, ".localhost"):
		a, ok = n.addr(name)
	}
	if !ok {
		return setHeader(resp, rflags|rcodeServFail, 1, 0)
	}
	ip := a.As4()
	resp = append(resp, 0xc0, dnsHeaderLen, 0, typeA, 0, classIN, 0, 0, dnsTTL>>8, dnsTTL&0xff, 0, 4)
	return setHeader(append(resp, ip[:]...), rflags, 1, 1)
}

func setHeader(resp []byte, flags, qd, an uint16) []byte {
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint16(resp[4:], qd)
	binary.BigEndian.PutUint16(resp[6:], an)
	return resp
}

// parseQuestion reads the first question of q: its name (lower case,
// without the final dot), type and class, and where it ends.
func parseQuestion(q []byte) (name string, qtype, qclass uint16, end int, ok bool) {
	var labels []string
	i := dnsHeaderLen
	for {
		if i >= len(q) {
			return "", 0, 0, 0, false
		}
		l := int(q[i])
		if l == 0 {
			break
		}
		// A question's name is never compressed; 63 is the longest label.
		if l > 63 || i+1+l > len(q) || len(labels) > 127 {
			return "", 0, 0, 0, false
		}
		labels = append(labels, strings.ToLower(string(q[i+1:i+1+l])))
		i += 1 + l
	}
	if i+5 > len(q) || len(labels) == 0 {
		return "", 0, 0, 0, false
	}
	return strings.Join(labels, "."), binary.BigEndian.Uint16(q[i+1:]), binary.BigEndian.Uint16(q[i+3:]), i + 5, true
}

// hostName reports whether name is a host name jukebox will name on the
// tape and dial: letters, digits, '-' and '_' in dot-separated labels, at
// most 253 bytes. Anything else (a query crafted to forge a frame) has no
// such domain.
func hostName(name string) bool {
	if len(name) > 253 {
		return false
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
