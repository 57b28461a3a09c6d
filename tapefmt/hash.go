package tapefmt

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/zeebo/blake3"
)

// Hash is a BLAKE3-256 digest: a blob's address, or a chain head.
type Hash [32]byte

// HashOf returns the BLAKE3-256 digest of b.
func HashOf(b []byte) Hash { return blake3.Sum256(b) }

// IsZero reports whether h is all zeros (no hash).
func (h Hash) IsZero() bool { return h == Hash{} }

// String returns h in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Short returns the first 12 hex digits, for display.
func (h Hash) Short() string { return h.String()[:12] }

// MarshalText writes h as hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads 64 hex digits.
func (h *Hash) UnmarshalText(b []byte) error {
	p, err := ParseHash(string(b))
	*h = p
	return err
}

// ParseHash reads 64 hex digits.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("hash %q is not 64 hex digits", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("hash %q: %w", s, err)
	}
	return h, nil
}

// Bytes are raw bytes that encode to JSON as a plain string when they are
// valid UTF-8 and as {"base64": "..."} otherwise, so text stays readable and
// nothing is lost.
type Bytes []byte

type bytesB64 struct {
	Base64 []byte `json:"base64"`
}

// MarshalJSON encodes b as text or base64.
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		return json.Marshal(string(b))
	}
	return json.Marshal(bytesB64{Base64: b})
}

// UnmarshalJSON decodes either form.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '{' {
		var x bytesB64
		if err := json.Unmarshal(data, &x); err != nil {
			return err
		}
		*b = x.Base64
		return nil
	}
	if plainJSONString(data) { // most output: its bytes as they are
		*b = Bytes(bytes.Clone(data[1 : len(data)-1]))
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	*b = Bytes(s)
	return nil
}

// plainJSONString says data is a JSON string whose value is its bytes
// between the quotes: no escape, no control character, valid UTF-8
// (which encoding/json would replace).
func plainJSONString(data []byte) bool {
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return false
	}
	in := data[1 : len(data)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(in)
}
