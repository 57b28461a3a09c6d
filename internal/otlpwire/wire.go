package otlpwire

import (
	"encoding/binary"
	"math"
)

// The protobuf wire format, as much of it as OTLP's requests and answers
// use. The messages are written here rather than through the generated
// OTLP packages: those link the protobuf runtime, whose package
// initialisation (a registry of every message, and a read of the
// executable for its seed) every command paid at start-up, used or not.
//
// Fields go in field-number order, a oneof's member after the other
// fields, with proto3's rules, as the protobuf runtime writes them
// (oracle_test.go holds the two to the same bytes):
// a scalar at its zero value is left out unless it is in a oneof or
// optional, a message present is written even when empty, repeated
// numbers are packed.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

func appendTag(b []byte, num, typ int) []byte {
	return binary.AppendUvarint(b, uint64(num)<<3|uint64(typ))
}

// appendVarint writes field num as a varint, left out at zero.
func appendVarint(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(appendTag(b, num, wireVarint), v)
}

// appendBool writes field num, left out when false.
func appendBool(b []byte, num int, v bool) []byte {
	if !v {
		return b
	}
	return append(appendTag(b, num, wireVarint), 1)
}

// appendFixed64 writes field num, left out at zero.
func appendFixed64(b []byte, num int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(appendTag(b, num, wireFixed64), v)
}

// appendFixed32 writes field num, left out at zero.
func appendFixed32(b []byte, num int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(appendTag(b, num, wireFixed32), v)
}

// appendDouble writes field num, left out at +0 (-0 is written, as the
// protobuf runtime does).
func appendDouble(b []byte, num int, v float64) []byte {
	return appendFixed64(b, num, math.Float64bits(v))
}

// appendString writes field num, left out when empty.
func appendString(b []byte, num int, s string) []byte {
	if s == "" {
		return b
	}
	return append(binary.AppendUvarint(appendTag(b, num, wireBytes), uint64(len(s))), s...)
}

// appendBytes writes field num, left out when empty.
func appendBytes(b []byte, num int, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	return append(binary.AppendUvarint(appendTag(b, num, wireBytes), uint64(len(v))), v...)
}

// appendMessage writes field num as the message body writes: its length
// goes before it once it is known (the body moved up to make room).
func appendMessage(b []byte, num int, body func([]byte) []byte) []byte {
	b = appendTag(b, num, wireBytes)
	at := len(b)
	b = body(b)
	n := len(b) - at
	var l [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(l[:], uint64(n))
	b = append(b, l[:k]...)
	copy(b[at+k:], b[at:at+n])
	copy(b[at:], l[:k])
	return b
}

// appendPacked writes repeated field num packed: each element as one
// writes it; left out when there are none.
func appendPacked[T any](b []byte, num int, xs []T, one func([]byte, T) []byte) []byte {
	if len(xs) == 0 {
		return b
	}
	return appendMessage(b, num, func(b []byte) []byte {
		for _, x := range xs {
			b = one(b, x)
		}
		return b
	})
}

// consumeTag reads a field's number and wire type; n < 0 when b does not
// hold one.
func consumeTag(b []byte) (num, typ, n int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v>>3 == 0 || v>>3 > math.MaxInt32 {
		return 0, 0, -1
	}
	return int(v >> 3), int(v & 7), n
}

// consumeVarint reads a varint; n < 0 when b does not hold one.
func consumeVarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, -1
	}
	return v, n
}

// consumeBytes reads a length-delimited value; n < 0 when b does not
// hold one.
func consumeBytes(b []byte) ([]byte, int) {
	l, n := consumeVarint(b)
	if n < 0 || l > uint64(len(b)-n) {
		return nil, -1
	}
	return b[n : n+int(l)], n + int(l)
}

// consumeValue skips the value of a field of wire type typ; n < 0 when b
// does not hold one (groups, long gone from protobuf, included).
func consumeValue(typ int, b []byte) int {
	switch typ {
	case wireVarint:
		_, n := consumeVarint(b)
		return n
	case wireFixed64:
		if len(b) < 8 {
			return -1
		}
		return 8
	case wireFixed32:
		if len(b) < 4 {
			return -1
		}
		return 4
	case wireBytes:
		_, n := consumeBytes(b)
		return n
	}
	return -1
}

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendLE64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
