package engine

import (
	"bytes"
	"encoding/binary"
)

// A carried connection's first bytes tell whether the agent speaks HTTP
// past jukebox's proxy, on a port other than 80 and 443 (which the booth
// refuses at connect): an HTTP/1 request line, HTTP/2's preface, or a TLS
// ClientHello offering HTTP through ALPN (h2, http/1.1). Such a
// connection is cut before any of its bytes reach the host: HTTP goes
// through the proxy, where it is recorded and replayed as HTTP. TLS
// without those ALPN names (IMAPS, a database over TLS, a client that
// names none) is plain TCP to jukebox, carried as it is.

// httpMethods start an HTTP/1 request line.
var httpMethods = [][]byte{[]byte("GET "), []byte("POST "), []byte("PUT "), []byte("HEAD "), []byte("DELETE "),
	[]byte("OPTIONS "), []byte("PATCH "), []byte("CONNECT "), []byte("TRACE "), []byte("PRI * HTTP/2")}

// speaksHTTP reports whether b, the first bytes the agent sent, open an
// HTTP request or a TLS handshake for HTTP.
func speaksHTTP(b []byte) bool {
	for _, m := range httpMethods {
		if bytes.HasPrefix(b, m) {
			return true
		}
	}
	for _, p := range alpn(b) {
		if p == "h2" || p == "http/1.1" || p == "http/1.0" {
			return true
		}
	}
	return false
}

// alpn returns the protocols a TLS ClientHello at the start of b offers
// (RFC 7301), or nil when b does not hold a whole one.
func alpn(b []byte) []string {
	// Record header (5), handshake type and length (4), version (2),
	// random (32).
	if len(b) < 43 || b[0] != 0x16 || b[1] != 3 || b[5] != 1 {
		return nil
	}
	r := reader(b[43:])
	r.skip8()  // session id
	r.skip16() // cipher suites
	r.skip8()  // compression methods
	ext := reader(r.take(r.u16()))
	for len(ext) >= 4 {
		typ, body := ext.u16(), reader(ext.take(ext.u16()))
		if typ != 16 { // application_layer_protocol_negotiation
			continue
		}
		var out []string
		list := reader(body.take(body.u16()))
		for len(list) > 0 {
			out = append(out, string(list.take(int(list.u8()))))
		}
		return out
	}
	return nil
}

// reader reads big-endian fields off the front of a byte slice; reading
// past its end yields zeros and empty slices.
type reader []byte

func (r *reader) take(n int) []byte {
	if n > len(*r) {
		n = len(*r)
	}
	out := (*r)[:n]
	*r = (*r)[n:]
	return out
}

func (r *reader) u8() uint8 {
	if b := r.take(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (r *reader) u16() int {
	if b := r.take(2); len(b) == 2 {
		return int(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) skip8()  { r.take(int(r.u8())) }
func (r *reader) skip16() { r.take(r.u16()) }
