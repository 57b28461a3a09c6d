package llmwire

// AWS event-stream framing (application/vnd.amazon.eventstream), which
// Bedrock's ConverseStream and InvokeModelWithResponseStream answer in:
// each message is a prelude (total length, headers length, CRC32 of the
// two), headers, a payload and a CRC32 of all that came before, every
// number big-endian.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// esMessage is one event-stream message: its string headers (:event-type,
// :message-type, :content-type, :exception-type) and payload.
type esMessage struct {
	Headers map[string]string
	Payload []byte
}

// esMaxMessage bounds one message, as AWS's own decoders do (16 MiB).
const esMaxMessage = 16 << 20

// decodeEventStream splits body into its messages. A message whose
// lengths or checksums do not hold ends the decoding with an error; the
// messages before it are returned, as a stream cut off mid-message keeps
// what arrived.
func decodeEventStream(body []byte) ([]esMessage, error) {
	var out []esMessage
	for len(body) > 0 {
		m, n, err := esNext(body)
		if err != nil {
			return out, err
		}
		out = append(out, m)
		body = body[n:]
	}
	return out, nil
}

// esNext decodes the message at the start of b and its length.
func esNext(b []byte) (esMessage, int, error) {
	if len(b) < 16 {
		return esMessage{}, 0, errors.New("event-stream: message cut off in its prelude")
	}
	total, hlen := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
	if crc32.ChecksumIEEE(b[:8]) != binary.BigEndian.Uint32(b[8:]) {
		return esMessage{}, 0, errors.New("event-stream: prelude checksum mismatch")
	}
	if total < 16 || total > esMaxMessage || uint64(hlen)+16 > uint64(total) {
		return esMessage{}, 0, fmt.Errorf("event-stream: bad lengths (message %d, headers %d)", total, hlen)
	}
	if uint32(len(b)) < total {
		return esMessage{}, 0, errors.New("event-stream: message cut off")
	}
	msg := b[:total]
	if crc32.ChecksumIEEE(msg[:total-4]) != binary.BigEndian.Uint32(msg[total-4:]) {
		return esMessage{}, 0, errors.New("event-stream: message checksum mismatch")
	}
	h, err := esHeaders(msg[12 : 12+hlen])
	if err != nil {
		return esMessage{}, 0, err
	}
	return esMessage{Headers: h, Payload: msg[12+hlen : total-4]}, int(total), nil
}

// esValueSize is the fixed size of each header value type; -1 marks the
// types with a 2-byte length before the value (bytes, string).
var esValueSize = [10]int{0, 0, 1, 2, 4, 8, -1, -1, 8, 16}

// esHeaders reads a message's headers, keeping the string ones.
func esHeaders(b []byte) (map[string]string, error) {
	h := map[string]string{}
	for len(b) > 0 {
		nl := int(b[0])
		if len(b) < 1+nl+1 {
			return nil, errors.New("event-stream: header cut off")
		}
		name, typ := string(b[1:1+nl]), b[1+nl]
		b = b[2+nl:]
		if int(typ) >= len(esValueSize) {
			return nil, fmt.Errorf("event-stream: header %q of unknown type %d", name, typ)
		}
		size := esValueSize[typ]
		if size < 0 {
			if len(b) < 2 {
				return nil, errors.New("event-stream: header cut off")
			}
			size = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) < size {
			return nil, errors.New("event-stream: header cut off")
		}
		if typ == 7 {
			h[name] = string(b[:size])
		}
		b = b[size:]
	}
	return h, nil
}

// isEventStream says body starts with an event-stream prelude whose
// checksum holds.
func isEventStream(body []byte) bool {
	return len(body) >= 16 && crc32.ChecksumIEEE(body[:8]) == binary.BigEndian.Uint32(body[8:])
}
