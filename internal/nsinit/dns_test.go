package nsinit

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// query builds a DNS query for name of type qtype, with id 0x1234 and
// recursion desired.
func query(name string, qtype uint16) []byte {
	q := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, byte(qtype>>8), byte(qtype), 0, 1)
}

// TestDNSAnswer: an A query gets an address of NamedPrefix, the same for
// the same name whatever its case or final dot, another for another
// name, and the table names it back; AAAA gets no record; localhost is
// loopback; a name with other characters has no such domain; what is
// not a query is dropped, and a malformed one is a format error.
func TestDNSAnswer(t *testing.T) {
	n := newNames()
	addr := func(name string) netip.Addr {
		t.Helper()
		r := n.answer(query(name, typeA))
		if len(r) < 16 || r[0] != 0x12 || r[1] != 0x34 || r[3]&0xf != 0 || binary.BigEndian.Uint16(r[6:]) != 1 {
			t.Fatalf("%s: answer % x", name, r)
		}
		return netip.AddrFrom4([4]byte(r[len(r)-4:]))
	}
	a := addr("api.example.test")
	if !NamedPrefix.Contains(a) || a != addr("API.Example.Test.") || a == addr("db.example.test") {
		t.Errorf("api.example.test is %v, then %v; db.example.test %v", a, addr("API.Example.Test."), addr("db.example.test"))
	}
	if name, ok := n.name(a); !ok || name != "api.example.test" {
		t.Errorf("%v is named %q, %v", a, name, ok)
	}
	if got := addr("svc.localhost"); got != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("svc.localhost is %v", got)
	}
	if r := n.answer(query("api.example.test", 28)); len(r) < 12 || binary.BigEndian.Uint16(r[6:]) != 0 || r[3]&0xf != 0 {
		t.Errorf("AAAA: % x", r)
	}
	if r := n.answer(query("a b.test", typeA)); len(r) < 12 || r[3]&0xf != rcodeNXDomain {
		t.Errorf("a name with a space: % x", r)
	}
	resp := n.answer(query("x.test", typeA))
	if n.answer(resp) != nil || n.answer([]byte{1, 2, 3}) != nil {
		t.Error("a response or a runt was answered")
	}
	bad := query("x.test", typeA)
	bad[12] = 200 // a label running past the end
	if r := n.answer(bad); len(r) != 12 || r[3]&0xf != rcodeFormErr || !bytes.Equal(r[:2], bad[:2]) {
		t.Errorf("malformed: % x", r)
	}
}

// FuzzDNSAnswer: no query, however malformed, panics the resolver (it
// runs in the booth's init), and every answer keeps the query's id.
func FuzzDNSAnswer(f *testing.F) {
	f.Add(query("api.example.test", typeA))
	f.Add(query("api.example.test", 28))
	f.Add([]byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 63})
	n := newNames()
	f.Fuzz(func(t *testing.T, q []byte) {
		if r := n.answer(q); r != nil && !bytes.Equal(r[:2], q[:2]) {
			t.Fatalf("answer % x to % x", r, q)
		}
	})
}
