package llmwire

import (
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// esEncode frames payload as one event-stream message with string headers
// (name, value pairs), as Bedrock sends them.
func esEncode(payload string, headers ...string) []byte {
	var h []byte
	for i := 0; i+1 < len(headers); i += 2 {
		h = append(h, byte(len(headers[i])))
		h = append(h, headers[i]...)
		h = append(h, 7)
		h = binary.BigEndian.AppendUint16(h, uint16(len(headers[i+1])))
		h = append(h, headers[i+1]...)
	}
	total := 16 + len(h) + len(payload)
	b := binary.BigEndian.AppendUint32(nil, uint32(total))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	b = append(append(b, h...), payload...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// esEvent is a Bedrock stream event of type typ.
func esEvent(typ, payload string) []byte {
	return esEncode(payload, ":event-type", typ, ":content-type", "application/json", ":message-type", "event")
}

// TestDecodeEventStreamVectors decodes AWS's published test vectors (an
// int32 header, a string header) and refuses a bad checksum.
func TestDecodeEventStreamVectors(t *testing.T) {
	oneStr := []byte{0, 0, 0, 61, 0, 0, 0, 32, 7, 253, 131, 150, 12, 99, 111, 110, 116, 101, 110, 116, 45, 116, 121, 112, 101, 7, 0, 16,
		97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115, 111, 110, 123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 125, 141, 156, 8, 177}
	int32Hdr := []byte{0, 0, 0, 45, 0, 0, 0, 16, 65, 196, 36, 184, 10, 101, 118, 101, 110, 116, 45, 116, 121, 112, 101, 4, 0, 0, 160, 12,
		123, 39, 102, 111, 111, 39, 58, 39, 98, 97, 114, 39, 125, 54, 244, 128, 160}
	msgs, err := decodeEventStream(append(append([]byte{}, oneStr...), int32Hdr...))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("decode = %d messages, %v", len(msgs), err)
	}
	if msgs[0].Headers["content-type"] != "application/json" || string(msgs[0].Payload) != "{'foo':'bar'}" {
		t.Errorf("message 1 = %+v", msgs[0])
	}
	if len(msgs[1].Headers) != 0 || string(msgs[1].Payload) != "{'foo':'bar'}" {
		t.Errorf("message 2 = %+v", msgs[1])
	}
	bad := append([]byte{}, oneStr...)
	bad[len(bad)-5] ^= 1
	if msgs, err := decodeEventStream(bad); err == nil || len(msgs) != 0 {
		t.Errorf("a corrupt payload decoded: %d, %v", len(msgs), err)
	}
	if msgs, err := decodeEventStream(append(append([]byte{}, oneStr...), int32Hdr[:20]...)); err == nil || len(msgs) != 1 {
		t.Errorf("a cut-off stream = %d messages, %v; want the first and an error", len(msgs), err)
	}
	if got := string(esEncode("{'foo':'bar'}", "content-type", "application/json")); got != string(oneStr) {
		t.Errorf("esEncode differs from AWS's vector")
	}
}

// bedrockInvokeStream is an InvokeModelWithResponseStream answer of an
// anthropic.* model: Anthropic's events base64-encoded in chunk events, the
// last with the invocation metrics.
func bedrockInvokeStream() []byte {
	events := []string{
		`{"type":"message_start","message":{"id":"msg_bdrk_01","type":"message","role":"assistant","model":"claude-3-5-sonnet-20240620","content":[],"usage":{"input_tokens":21,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello there"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`,
		`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":21,"outputTokenCount":9,"invocationLatency":512,"firstByteLatency":300}}`,
	}
	var body []byte
	for _, e := range events {
		body = append(body, esEvent("chunk", `{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(e))+`","p":"abcd"}`)...)
	}
	return body
}
